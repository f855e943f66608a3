// The server's grammar vocabularies (server/token_vocabs.h): one per set of CONTROL tokens a
// grammar may write, built once; exactly those tokens carry their text, every other CONTROL
// token none, so a plain grammar can never emit one.
#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"
#include "server/token_vocabs.h"
#include "tokenizer/builtin_vocab.h"

namespace fulgur::server {
namespace {

Tokenizer tagged_tokenizer() {
  Vocab v = builtin_byte_vocab();
  for (const char* t : {"<|tool_call>", "<tool_call|>"}) {
    v.tokens.push_back(t);
    v.token_types.push_back(TokenType::kControl);
    if (!v.scores.empty()) v.scores.push_back(0.0f);
  }
  return Tokenizer(std::move(v));
}

TEST(TokenVocabs, OnePerSetOfControlTokensWithExactlyThoseGivenText) {
  const Tokenizer tok = tagged_tokenizer();
  const int32_t open = tok.token_to_id("<|tool_call>"), close = tok.token_to_id("<tool_call|>");
  const int32_t im_start = tok.token_to_id("<|im_start|>");
  ASSERT_GE(open, 0);
  ASSERT_GE(close, 0);
  TokenVocabs vocabs(tok, tok.n_tokens());
  const auto plain = vocabs.get({});
  EXPECT_EQ(vocabs.get({}), plain);  // same set, same object
  const auto tags = vocabs.get({close, open});
  EXPECT_EQ(vocabs.get({open, close, open}), tags);  // any order, repeats
  EXPECT_NE(tags, plain);
  // A token with text of its own ('A') adds nothing: the plain vocabulary.
  EXPECT_EQ(vocabs.get({tok.token_to_id("A")}), plain);
  EXPECT_EQ(vocabs.size(), 2u);
  EXPECT_EQ(plain->piece(open), "");
  EXPECT_EQ(tags->piece(open), "<|tool_call>");
  EXPECT_EQ(tags->piece(close), "<tool_call|>");
  EXPECT_EQ(tags->piece(im_start), "");  // not asked for: still no text
  const auto one = vocabs.get({open});
  EXPECT_EQ(one->piece(close), "");
  // A grammar that writes the tag: only the vocabulary that gives it text lets the token through.
  GrammarMatcher m(std::make_shared<Grammar>(parse_gbnf("root ::= \"<|tool_call>\" \"x\"")));
  EXPECT_TRUE(tags->allows(m, open));
  EXPECT_FALSE(plain->allows(m, open));
}

}  // namespace
}  // namespace fulgur::server
