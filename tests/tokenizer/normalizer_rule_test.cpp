// The normalizer of a GGUF vocabulary (tokenizer/normalizer_rule.h): fulgur's key when present,
// else NFC for the known NFC vocabularies (Qwen2/Qwen3's merges), else none. Checked against
// transformers.js on decomposed and composed text, for a Qwen3 GGUF written the way llama.cpp
// writes it (no normalizer record) and for the zoo's llama.cpp-arch GGUF, whose tokenizer uses
// the qwen2 regex without NFC.
#include "zoo_path.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "oracle.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/normalizer_rule.h"
#include "tokenizer/tokenizer.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

// Text in decomposed (NFD) and composed forms: combining accents (Latin, Vietnamese), Hangul
// jamo, and mixtures with ASCII, digits and punctuation.
std::vector<std::string> normalization_cases() {
  return {
      "cafe\xcc\x81",                                     // e + U+0301
      "caf\xc3\xa9",                                      // é
      "Cafe\xcc\x81 au lait, cre\xcc\x80me bru\xcc\x82le\xcc\x81" "e!",
      "A\xcc\x8angstro\xcc\x88m = 10^-10 m",              // Å, ö decomposed
      "ti\xe1\xba\xbfng Vie\xcc\xa3\xcc\x82t",           // Vietnamese, stacked marks
      "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab\xe1\x84\x80\xe1\x85\xb3\xe1\x86\xaf",  // 한글 as jamo
      "\xed\x95\x9c\xea\xb8\x80",                         // 한글 composed
      "n\xcc\x83 and \xc3\xb1, x\xcc\x81y",               // ñ both ways, x + acute (no precomposed)
      "def f(): return 'e\xcc\x81'  # 2024",
  };
}

// `v` written as a GGUF (write_vocab), with fulgur's normalizer key removed when asked (the file
// llama.cpp's converter writes), read back.
Vocab through_gguf(const Vocab& v, bool keep_key) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  write_vocab(w, v);
  if (!keep_key) w.remove(kNormalizerKey);
  const GgufReader r(w.to_bytes(), "vocab.gguf");
  return read_vocab(r);
}

TEST(NormalizerRule, NamesAndTheKey) {
  EXPECT_EQ(parse_normalizer_name("nfc", "k"), Normalizer::kNfc);
  EXPECT_EQ(parse_normalizer_name("none", "k"), Normalizer::kNone);
  EXPECT_THROW(parse_normalizer_name("NFKC", "k"), Error);
  Vocab v;
  v.tokens = {"a", "b", "ab"};
  v.merges = {"a b"};
  for (Normalizer n : {Normalizer::kNfc, Normalizer::kNone}) {
    v.normalizer = n;
    EXPECT_EQ(through_gguf(v, true).normalizer, n);  // the key wins
  }
  v.normalizer = Normalizer::kNfc;
  EXPECT_EQ(through_gguf(v, false).normalizer, Normalizer::kNone);  // unknown merges: as llama.cpp
}

class QwenGguf : public testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::npm_packages_missing(); !why.empty()) GTEST_SKIP() << why;
    hf_ = load_hf_tokenizer(test::qwen3_dir() + "/tokenizer.json");
    apply_hf_config(hf_, load_hf_tokenizer_config(test::qwen3_dir() + "/tokenizer_config.json"));
  }
  Vocab hf_;
};

// The constant in normalizer_rule.cpp is the fingerprint of Qwen3's merges.
TEST_F(QwenGguf, FingerprintOfTheQwenMerges) {
  EXPECT_EQ(hf_.normalizer, Normalizer::kNfc);  // tokenizer.json declares it
  EXPECT_EQ(hf_.merges.size(), 151387u);
  EXPECT_EQ(default_normalizer("qwen2", hf_.merges), Normalizer::kNfc);
  EXPECT_EQ(default_normalizer("llama-bpe", hf_.merges), Normalizer::kNone);  // not that family
  std::vector<std::string> one_off = hf_.merges;
  one_off.back() = "x y";
  EXPECT_EQ(default_normalizer("qwen2", one_off), Normalizer::kNone);
}

// A Qwen3 GGUF without fulgur's key (as llama.cpp writes it) tokenizes like the model's own
// tokenizer: NFC first. Without the rule it would not (checked, so the test can fail).
TEST_F(QwenGguf, LlamaCppWrittenFileTokenizesLikeTransformersJs) {
  const std::string missing = test::oracle_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  Vocab from_gguf = through_gguf(hf_, false);
  ASSERT_EQ(from_gguf.normalizer, Normalizer::kNfc);
  const Tokenizer t(std::move(from_gguf));
  Vocab raw = through_gguf(hf_, false);
  raw.normalizer = Normalizer::kNone;  // llama.cpp's behaviour
  const Tokenizer llama_like(std::move(raw));
  std::vector<test::OracleCase> cases;
  for (const std::string& s : normalization_cases()) cases.push_back({s, false});
  const auto expected = test::oracle_encode(test::qwen3_dir() + "/tokenizer.json",
                                            test::qwen3_dir() + "/tokenizer_config.json", cases);
  ASSERT_EQ(expected.size(), cases.size());
  int differ_without_nfc = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(t.encode(cases[i].text, false), expected[i]) << "case " << i;
    differ_without_nfc += llama_like.encode(cases[i].text, false) != expected[i];
  }
  EXPECT_GT(differ_without_nfc, 0) << "no case tells NFC from no normalizer";
}

// The zoo's GGUF (llama.cpp arch qwen35, pre qwen2, no normalizer record) is not the Qwen
// vocabulary: no NFC, as its tokenizer.json says; decomposed text stays decomposed.
TEST(ZooGgufNormalizer, QwenRegexWithoutNfcStaysUnnormalized) {
  const std::string zoo = test::zoo_dir();
  const std::string gguf = zoo + "/zoo-qwen35-code/zoo-qwen35-code-f32.gguf";
  const std::string json = zoo + "/zoo-qwen3-code/tokenizer.json";
  if (!fs::exists(gguf) || !fs::exists(json)) GTEST_SKIP() << "zoo not found at " << zoo;
  const GgufReader r(gguf);
  ASSERT_FALSE(r.has(kNormalizerKey));
  Vocab v = read_vocab(r);
  EXPECT_EQ(v.pre, "qwen2");
  EXPECT_EQ(v.normalizer, Normalizer::kNone);
  const Tokenizer t(std::move(v));
  const std::string missing = test::oracle_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  std::vector<test::OracleCase> cases;
  for (const std::string& s : normalization_cases()) cases.push_back({s, false});
  const auto expected = test::oracle_encode(json, zoo + "/zoo-qwen3-code/tokenizer_config.json", cases);
  ASSERT_EQ(expected.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(t.encode(cases[i].text, false), expected[i]) << "case " << i;
  }
}

}  // namespace
}  // namespace fulgur
