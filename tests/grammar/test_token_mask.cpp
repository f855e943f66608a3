// The token mask: exactly the tokens whose bytes the grammar can read next, end-of-generation
// only at a complete sentence; checked against asking the matcher token by token.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"

namespace fulgur {
namespace {

// A vocabulary of every byte, some multi-byte pieces (shared prefixes, UTF-8 split across
// tokens), a control token (no text) and an end token.
TokenVocab test_vocab() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const char* p : {"{\"", "\":", "\": ", "true", "tr", "false", "null", "12", "123", "\"}", "},",
                        "ab", "abc", "\xCE", "\xCE\xB2", "\xB2\"", " \"", "\n  ", "\",\""}) {
    pieces.push_back(p);
  }
  pieces.push_back("");       // a control token
  pieces.push_back("<eos>");  // the end token: its text is never matched
  const int32_t eos = static_cast<int32_t>(pieces.size()) - 1;
  return TokenVocab(pieces, {eos});
}

void expect_mask_matches_matcher(const GrammarMatcher& m, const TokenVocab& v) {
  TokenMasker masker;
  std::vector<uint64_t> allowed;
  const int64_t n = masker.fill(m, v, allowed);
  int64_t count = 0;
  for (int32_t id = 0; id < v.n_vocab(); ++id) {
    EXPECT_EQ(mask_allows(allowed, id), v.allows(m, id)) << "token " << id << " '" << v.piece(id) << "'";
    count += mask_allows(allowed, id);
  }
  EXPECT_EQ(n, count);
}

TEST(TokenMask, AgreesWithTheMatcherAlongAJsonDocument) {
  const TokenVocab v = test_vocab();
  const auto g = std::make_shared<Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"},"n":{"type":"integer"}},
          "required":["a","b","n"]})")));
  GrammarMatcher m(g);
  const std::string doc = "{\"a\": \"x\xCE\xB2\", \"b\": true, \"n\": 123}";
  expect_mask_matches_matcher(m, v);
  for (char c : doc) {
    ASSERT_TRUE(m.accept_byte(static_cast<uint8_t>(c)));
    expect_mask_matches_matcher(m, v);
  }
  EXPECT_TRUE(m.complete());
  TokenMasker masker;
  std::vector<uint64_t> allowed;
  EXPECT_EQ(masker.fill(m, v, allowed), 1);  // only the end token
  EXPECT_TRUE(mask_allows(allowed, v.n_vocab() - 1));
  EXPECT_FALSE(mask_allows(allowed, v.n_vocab() - 2));  // the control token, never
}

TEST(TokenMask, TokenAcceptAdvancesAndRejectsAsOneUnit) {
  const TokenVocab v = test_vocab();
  GrammarMatcher m(std::make_shared<Grammar>(parse_gbnf("root ::= \"ab\" [a-z]* \".\"")));
  const int32_t ab = 256 + 11, abc = 256 + 12, eos = v.n_vocab() - 1;
  ASSERT_EQ(v.piece(ab), "ab");
  EXPECT_FALSE(v.accept(m, eos));
  EXPECT_TRUE(v.accept(m, abc));
  EXPECT_FALSE(v.accept(m, '{'));
  EXPECT_TRUE(v.accept(m, '.'));
  EXPECT_TRUE(v.accept(m, eos));
  EXPECT_TRUE(m.complete());
}

TEST(TokenMask, RandomWalksAgreeWithTheMatcher) {
  // Follow random allowed tokens through a nested grammar; the mask must equal the per-token
  // answer at every step.
  const TokenVocab v = test_vocab();
  const auto g = std::make_shared<Grammar>(parse_gbnf(json_object_gbnf()));
  std::mt19937 rng(3);
  for (int walk = 0; walk < 3; ++walk) {
    GrammarMatcher m(g);
    TokenMasker masker;
    std::vector<uint64_t> allowed;
    for (int step = 0; step < 40; ++step) {
      expect_mask_matches_matcher(m, v);
      masker.fill(m, v, allowed);
      std::vector<int32_t> ids;
      for (int32_t id = 0; id < v.n_vocab(); ++id) {
        if (mask_allows(allowed, id) && !v.is_eog(id)) ids.push_back(id);
      }
      if (ids.empty()) break;
      ASSERT_TRUE(v.accept(m, ids[rng() % ids.size()]));
    }
  }
}

TEST(TokenMask, KeptMasksEqualFreshWalksAcrossStatesAndGrammars) {
  // One masker serving two grammars in turn (as a verifier serves requests): every mask equals
  // a walk from scratch, and repeated states (inside strings) are answered from the kept ones.
  const TokenVocab v = test_vocab();
  const auto a = std::make_shared<Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"ab": {"type": "string"}, "n": {"type": "integer"}}})")));
  const auto b = std::make_shared<Grammar>(parse_gbnf(json_object_gbnf()));
  TokenMasker kept(4), fresh(0);
  std::mt19937 rng(5);
  for (int walk = 0; walk < 6; ++walk) {
    GrammarMatcher m(walk % 2 ? b : a);
    std::vector<uint64_t> got, want;
    for (int step = 0; step < 40; ++step) {
      const int64_t n = kept.fill(m, v, got);
      EXPECT_EQ(n, fresh.fill(m, v, want)) << "walk " << walk << " step " << step;
      ASSERT_EQ(got, want) << "walk " << walk << " step " << step;
      std::vector<int32_t> ids;
      for (int32_t id = 0; id < v.n_vocab(); ++id) {
        if (mask_allows(got, id) && !v.is_eog(id)) ids.push_back(id);
      }
      if (ids.empty()) break;
      ASSERT_TRUE(v.accept(m, ids[rng() % ids.size()]));
    }
  }
  EXPECT_GT(kept.cache_hits(), 0);
  EXPECT_EQ(fresh.cache_hits(), 0);
}

}  // namespace
}  // namespace fulgur
