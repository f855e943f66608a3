// Streaming detokenizer: characters split across tokens, invalid bytes, special tokens.
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

// Only the 256 byte tokens (id == byte) plus one control and one user-defined token, so every
// multi-byte character is spread over several tokens.
Tokenizer bytes_only() {
  Vocab v;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(b)));
    v.tokens.push_back(s);
  }
  v.token_types.assign(256, TokenType::kNormal);
  v.tokens.push_back("<|im_end|>");  // 256
  v.token_types.push_back(TokenType::kControl);
  v.tokens.push_back("<think>");  // 257
  v.token_types.push_back(TokenType::kUserDefined);
  return Tokenizer(v);
}

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(StreamDecoder, HoldsSplitCharactersUntilComplete) {
  const Tokenizer t = bytes_only();
  const std::string text = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\xa6\x99z";  // a é 中 🦙 z
  StreamDecoder d(t);
  std::vector<std::string> outs;
  for (unsigned char b : text) outs.push_back(d.push(b));
  const std::vector<std::string> expected = {
      "a", "", "\xc3\xa9", "", "", "\xe4\xb8\xad", "", "", "", "\xf0\x9f\xa6\x99", "z"};
  EXPECT_EQ(outs, expected);
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer t = bytes_only();
  StreamDecoder d(t);
  EXPECT_EQ(d.push(0xFF), kReplacement);  // can never start a character
  EXPECT_EQ(d.push(0xE2), "");
  EXPECT_EQ(d.push(0x82), "");
  EXPECT_EQ(d.push('A'), kReplacement + "A");  // E2 82 was cut short: one U+FFFD
  EXPECT_EQ(d.push(0x80), kReplacement);       // lone continuation byte
  EXPECT_EQ(d.push(0xED), "");
  EXPECT_EQ(d.push(0xA0), kReplacement + kReplacement);  // surrogate lead: ED, then A0 alone
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.flush(), kReplacement);  // incomplete tail at the end of the stream
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.push('x'), "x");  // reusable after flush
}

TEST(StreamDecoder, SpecialTokensRenderedOrHidden) {
  const Tokenizer t = bytes_only();
  StreamDecoder hidden(t, false), shown(t, true);
  EXPECT_EQ(hidden.push(256), "");
  EXPECT_EQ(shown.push(256), "<|im_end|>");
  EXPECT_EQ(hidden.push(257), "<think>");  // user-defined tokens are text
  // A control token between the bytes of a character does not break it.
  EXPECT_EQ(hidden.push(0xC3), "");
  EXPECT_EQ(hidden.push(256), "");
  EXPECT_EQ(hidden.push(0xA9), "\xc3\xa9");
}

TEST(StreamDecoder, RandomSplitsReassembleExactly) {
  const Tokenizer t = bytes_only();
  const std::string text = "Grüße 中文 \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 Привет नमस्ते";
  StreamDecoder d(t);
  std::string out;
  for (unsigned char b : text) {
    d.push(b, out);
    EXPECT_TRUE(is_valid_utf8(out));
  }
  d.flush(out);
  EXPECT_EQ(out, text);
}

TEST(StreamDecoder, ResetDropsHeldBytes) {
  const Tokenizer t = bytes_only();
  StreamDecoder d(t);
  EXPECT_EQ(d.push(0xE4), "");
  d.reset();
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.flush(), "");
}

// A chat format's tags that are CONTROL tokens are shown when asked for (the tool-call parser
// reads them); other control tokens stay hidden.
TEST(StreamDecoder, ShowsTheControlTokensItIsAskedTo) {
  const Tokenizer t = bytes_only();
  StreamDecoder hidden(t);
  EXPECT_EQ(hidden.push(256), "");
  StreamDecoder shown(t);
  shown.show_control_tokens({256});
  EXPECT_EQ(shown.push('a'), "a");
  EXPECT_EQ(shown.push(256), "<|im_end|>");
  EXPECT_EQ(shown.push(257), "<think>");
}

}  // namespace
}  // namespace fulgur
