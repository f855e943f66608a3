// Small hand-built vocabularies: BPE merge order, special tokens, byte fallback of invalid UTF-8,
// and the UTF-8 helpers.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

std::string stand_in(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) append_utf8(out, byte_to_codepoint(b));
  return out;
}

// 256 byte tokens (id == byte), then the merges' results, then extra tokens.
Vocab byte_vocab(const std::vector<std::pair<std::string, std::string>>& merges) {
  Vocab v;
  v.pre = "qwen2";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(stand_in(std::string(1, static_cast<char>(b))));
  for (const auto& [l, r] : merges) {
    v.tokens.push_back(stand_in(l) + stand_in(r));
    v.merges.push_back(stand_in(l) + " " + stand_in(r));
  }
  v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  return v;
}

TEST(ByteTable, MatchesGpt2) {
  EXPECT_EQ(byte_to_codepoint(' '), 0x120u);
  EXPECT_EQ(byte_to_codepoint('\n'), 0x10Au);
  EXPECT_EQ(byte_to_codepoint('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(byte_to_codepoint(0xAD), 0x143u);
  EXPECT_EQ(byte_to_codepoint(0x7F), 0x121u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(codepoint_to_byte(byte_to_codepoint(b)), b);
  EXPECT_EQ(codepoint_to_byte(0x144), -1);
}

TEST(Bpe, LowestRankFirstLeftmostOnTies) {
  // "aaa": the single merge a+a applies to the leftmost pair first -> [aa][a].
  Vocab v = byte_vocab({{"a", "a"}});
  Tokenizer t(v);
  EXPECT_EQ(t.encode("aaa", false), (std::vector<int32_t>{256, 'a'}));
  // Rank decides, not position: "abc" with merges (b c) rank 0, (a b) rank 1 -> [a][bc].
  Tokenizer t2(byte_vocab({{"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(t2.encode("abc", false), (std::vector<int32_t>{'a', 256}));
  Tokenizer t3(byte_vocab({{"a", "b"}, {"b", "c"}, {"ab", "c"}}));
  EXPECT_EQ(t3.encode("abc", false), (std::vector<int32_t>{258}));
}

TEST(Bpe, InvalidUtf8RoundTrips) {
  Tokenizer t(byte_vocab({{" ", "h"}}));
  const std::string text = "a\xff\xfe b\xe2\x82 h\xc3";
  const auto ids = t.encode(text, false);
  EXPECT_EQ(t.decode(ids), text);
}

TEST(Special, ParseSpecialAndUserDefined) {
  Vocab v = byte_vocab({});
  v.tokens.push_back("<|im_start|>");  // 256 control
  v.token_types.push_back(TokenType::kControl);
  v.tokens.push_back("<think>");  // 257 user-defined
  v.token_types.push_back(TokenType::kUserDefined);
  v.tokens.push_back("<|im_start|>x");  // 258 control, longer: wins where it matches
  v.token_types.push_back(TokenType::kControl);
  Tokenizer t(v);
  EXPECT_EQ(t.encode("<|im_start|>", true), (std::vector<int32_t>{256}));
  EXPECT_EQ(t.encode("<|im_start|>x", true), (std::vector<int32_t>{258}));
  EXPECT_EQ(t.encode("<think>", false), (std::vector<int32_t>{257}));
  const auto plain = t.encode("<|im_start|>", false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(t.decode(plain), "<|im_start|>");
  EXPECT_EQ(t.decode({256, 'a'}, true), "<|im_start|>a");
  EXPECT_EQ(t.decode({256, 'a'}, false), "a");
  EXPECT_EQ(t.decode({257}, false), "<think>");
}

TEST(Special, AddBosEos) {
  Vocab v = byte_vocab({});
  v.tokens.push_back("<s>");
  v.token_types.push_back(TokenType::kControl);
  v.bos_id = v.eos_id = 256;
  v.add_bos = v.add_eos = true;
  Tokenizer t(v);
  EXPECT_EQ(t.encode("a", false, true), (std::vector<int32_t>{256, 'a', 256}));
  EXPECT_EQ(t.encode("a", false, false), (std::vector<int32_t>{'a'}));
  EXPECT_TRUE(t.is_eog(256));
  EXPECT_FALSE(t.is_eog('a'));
}

TEST(Vocab, BadInputThrows) {
  Vocab v = byte_vocab({{"a", "b"}});
  {
    Vocab bad = v;
    bad.merges.push_back("a z");  // 'z' ok, but "az" is not a token
    EXPECT_THROW(Tokenizer{bad}, Error);
  }
  {
    Vocab bad = v;
    bad.merges.push_back("nospace");
    EXPECT_THROW(Tokenizer{bad}, Error);
  }
  {
    Vocab bad = v;
    bad.tokens.erase(bad.tokens.begin() + 'q');
    bad.token_types.pop_back();
    EXPECT_THROW(Tokenizer{bad}, Error);  // byte 'q' has no token
  }
  {
    Vocab bad = v;
    bad.eos_id = 100000;
    EXPECT_THROW(Tokenizer{bad}, Error);
  }
  {
    Vocab bad = v;
    bad.pre = "no-such-pre";
    try {
      Tokenizer tok(bad);
      FAIL() << "expected an Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos);
    }
  }
  Tokenizer t(v);
  EXPECT_THROW(t.decode({-1}), Error);
  EXPECT_THROW(t.token_text(t.n_tokens()), Error);
}

TEST(Utf8, StepClassifies) {
  auto step = [](std::string_view s) {
    return utf8_step(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  };
  EXPECT_EQ(step("\xe2\x82\xac").kind, Utf8Step::kValid);
  EXPECT_EQ(step("\xe2\x82\xac").cp, 0x20ACu);
  EXPECT_EQ(step("\xe2\x82").kind, Utf8Step::kIncomplete);
  EXPECT_EQ(step("\xc0\xaf").kind, Utf8Step::kInvalid);          // overlong
  EXPECT_EQ(step("\xed\xa0\x80").kind, Utf8Step::kInvalid);      // surrogate
  EXPECT_EQ(step("\xf4\x90\x80\x80").kind, Utf8Step::kInvalid);  // > U+10FFFF
  EXPECT_EQ(step("\xe2\x41").length, 1u);
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xf0\x9f\xa6\x99"));
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(Utf8, NfcComposesAndKeepsInvalidBytes) {
  EXPECT_EQ(nfc_normalize("e\xcc\x81"), "\xc3\xa9");  // e + U+0301 -> é
  EXPECT_EQ(nfc_normalize("abc"), "abc");
  EXPECT_EQ(nfc_normalize("e\xcc\x81\xff"), "\xc3\xa9\xff");
  // U+212B ANGSTROM SIGN is not NFC-stable: it becomes U+00C5.
  EXPECT_EQ(nfc_normalize("\xe2\x84\xab"), "\xc3\x85");
}

}  // namespace
}  // namespace fulgur
