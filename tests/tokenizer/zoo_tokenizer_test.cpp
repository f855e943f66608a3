// The zoo's trained 4096-token BPE (qwen2 regex, no normalizer): exact round trips of Python
// source, ids equal to transformers.js, and encode speed on 1 MB. Skips where the zoo is absent.
#include "zoo_path.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "oracle.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

std::string zoo_dir() { return fulgur::test::zoo_dir() + "/zoo-qwen3-code"; }

std::vector<std::string> python_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".py") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ZooTokenizer : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(zoo_dir() + "/tokenizer.json"))
      GTEST_SKIP() << "zoo not found at " << zoo_dir();
    Vocab v = load_hf_tokenizer(zoo_dir() + "/tokenizer.json");
    apply_hf_config(v, load_hf_tokenizer_config(zoo_dir() + "/tokenizer_config.json"));
    tokenizer_ = std::make_unique<Tokenizer>(std::move(v));
    files_ = python_files("/usr/lib/python3.11/json");
    if (files_.empty()) GTEST_SKIP() << "/usr/lib/python3.11/json not found";
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<std::string> files_;
};

TEST_F(ZooTokenizer, Shape) {
  const Vocab& v = tokenizer_->vocab();
  EXPECT_EQ(v.pre, "qwen2");
  EXPECT_EQ(v.normalizer, Normalizer::kNone);
  EXPECT_EQ(tokenizer_->n_tokens(), 4096);
  EXPECT_EQ(v.merges.size(), 3836u);
  EXPECT_EQ(v.eos_id, 4092);
  EXPECT_EQ(v.pad_id, 4092);
  EXPECT_EQ(tokenizer_->token_to_id("<|MASK|>"), 4095);
  EXPECT_EQ(tokenizer_->token_type(4095), TokenType::kControl);
}

TEST_F(ZooTokenizer, PythonSourceRoundTripsExactly) {
  for (const std::string& path : files_) {
    const std::string text = test::read_text_file(path);
    const auto ids = tokenizer_->encode(text, false);
    EXPECT_EQ(tokenizer_->decode(ids), text) << path;
    EXPECT_LT(ids.size(), text.size() / 2) << path;  // a trained code BPE compresses Python
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, true)), text) << path;
  }
}

TEST_F(ZooTokenizer, IdsMatchTransformersJs) {
  const std::string missing = test::oracle_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  std::vector<test::OracleCase> cases;
  for (const std::string& path : files_) cases.push_back({test::read_text_file(path), false});
  cases.push_back({"<|im_start|>user\nprint('hi')<|im_end|>\n<|endoftext|>", true});
  cases.push_back({"<|im_start|>user\nprint('hi')<|im_end|>\n<|endoftext|>", false});
  cases.push_back({"Grüße, мир! 中文 \xf0\x9f\xa6\x99 1234567 \t\r\n  x", false});
  const auto expected = test::oracle_encode(zoo_dir() + "/tokenizer.json",
                                            zoo_dir() + "/tokenizer_config.json", cases);
  ASSERT_EQ(expected.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(tokenizer_->encode(cases[i].text, cases[i].parse_special), expected[i])
        << "case " << i;
  }
}

// Not a timing assertion: prints the speed so a regression is visible in the log.
TEST_F(ZooTokenizer, EncodesOneMegabyte) {
  std::string text;
  for (const std::string& path : python_files("/usr/lib/python3.11")) {
    text += test::read_text_file(path);
    if (text.size() >= (1u << 20)) break;
  }
  text.resize(std::min<size_t>(text.size(), 1u << 20));
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tokenizer_->encode(text, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ zoo ] encoded %zu bytes -> %zu tokens in %.3f s (%.1f MB/s)\n", text.size(),
              ids.size(), seconds, text.size() / seconds / 1e6);
  EXPECT_EQ(tokenizer_->decode(ids), text);
}

// Pathological inputs: megabyte-long single regex matches (PCRE2 JIT stack) and random bytes
// (invalid UTF-8 must pass through byte-level BPE and decode back exactly).
TEST_F(ZooTokenizer, LongRunsAndRandomBytes) {
  for (const char fill : {' ', 'a', '7', '\n', '!'}) {
    const std::string text(1u << 18, fill);
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, false)), text) << int(fill);
  }
  std::mt19937 rng(7);
  std::string bytes(1u << 18, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(bytes, true)), bytes);
}

}  // namespace
}  // namespace fulgur
