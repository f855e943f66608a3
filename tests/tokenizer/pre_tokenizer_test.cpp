// Regex pre-tokenizers on their own: the qwen2 splitting rules of archs-gguf.md §5.3, Llama 3's
// digit groups, and the choices made where regex engines disagree (\s, case-insensitivity).
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace fulgur {
namespace {

std::vector<std::string> split(const char* name, std::string_view text) {
  PreTokenizer pre(name);
  std::vector<std::string_view> pieces, scratch;
  pre.split(text, pieces, scratch);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Qwen2Rules) {
  EXPECT_EQ(split("qwen2", " hello world"), (Pieces{" hello", " world"}));
  EXPECT_EQ(split("qwen2", "3333"), (Pieces{"3", "3", "3", "3"}));
  EXPECT_EQ(split("qwen2", "DON'T we'll"), (Pieces{"DON", "'T", " we", "'ll"}));
  EXPECT_EQ(split("qwen2", "a   b"), (Pieces{"a", "  ", " b"}));  // run gives up its last space
  EXPECT_EQ(split("qwen2", "x \n\n y"), (Pieces{"x", " \n\n", " y"}));
  EXPECT_EQ(split("qwen2", " ((x))\r\n"), (Pieces{" ((", "x", "))\r\n"}));
  EXPECT_EQ(split("qwen2", "中文 テスト"), (Pieces{"中文", " テスト"}));
  EXPECT_EQ(split("qwen2", ""), Pieces{});
}

TEST(PreTokenizer, Llama3GroupsDigitsByThree) {
  EXPECT_EQ(split("llama-bpe", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("gpt2", "abc 1234 !!"), (Pieces{"abc", " 1234", " !!"}));
}

TEST(PreTokenizer, Qwen35KeepsCombiningMarksWithLetters) {
  // e + U+0301: qwen2 splits the mark off as punctuation, qwen35 keeps it in the word.
  EXPECT_EQ(split("qwen2", "e\xcc\x81t"), (Pieces{"e", "\xcc\x81t"}));
  EXPECT_EQ(split("qwen35", "e\xcc\x81t"), (Pieces{"e\xcc\x81t"}));
}

TEST(PreTokenizer, ContractionsAreAsciiOnly) {
  // A caseless 's' would also match U+017F LONG S under Unicode case folding; llama.cpp and
  // transformers.js spell the group as [sS], so "'ſa" stays one piece.
  EXPECT_EQ(split("qwen2",
                  "'\xc5\xbf"
                  "a"),
            (Pieces{"'\xc5\xbf"
                    "a"}));
  EXPECT_EQ(split("qwen2", "'Sa"), (Pieces{"'S", "a"}));
}

TEST(PreTokenizer, WhiteSpaceIsUnicodeWhiteSpace) {
  // U+0085 NEXT LINE is White_Space (Oniguruma, llama.cpp) although PCRE2's UCP \s omits it.
  EXPECT_EQ(split("qwen2", ".\xc2\x85"), (Pieces{".", "\xc2\x85"}));
  // U+FEFF is not White_Space: it is punctuation-like here.
  EXPECT_EQ(split("qwen2", ".\xef\xbb\xbf"), (Pieces{".\xef\xbb\xbf"}));
  EXPECT_EQ(split("qwen2",
                  "a\xe3\x80\x80\xe3\x80\x80"
                  "b"),
            (Pieces{"a", "\xe3\x80\x80",
                    "\xe3\x80\x80"
                    "b"}));
}

TEST(PreTokenizer, InvalidUtf8BecomesItsOwnPieces) {
  const std::string text = "ab\xff\xfe cd\xc3";
  const Pieces pieces = split("qwen2", text);
  std::string joined;
  for (const std::string& p : pieces) joined += p;
  EXPECT_EQ(joined, text);
  EXPECT_EQ(pieces.front(), "ab");
}

TEST(PreTokenizer, NamesAndRecognition) {
  EXPECT_THROW(PreTokenizer("nope"), Error);
  EXPECT_TRUE(default_ignore_merges("llama-bpe"));
  EXPECT_FALSE(default_ignore_merges("qwen2"));
  EXPECT_EQ(
      pre_tokenizer_name_for(
          {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}),
      "qwen2");
  EXPECT_EQ(pre_tokenizer_name_for({"\\p{L}+"}), "");
  EXPECT_EQ(pre_tokenizer_name_for({}), "");
  for (const PreTokenizerDef& def : known_pre_tokenizers()) {
    EXPECT_NO_THROW(PreTokenizer{def.name}) << def.name;
  }
}

}  // namespace
}  // namespace fulgur
