// TokenIndex (tokenizer/token_index.h): lookups against a plain scan of the texts, on a table
// large enough for many probe collisions, with repeated and empty texts.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/token_index.h"

namespace fulgur {
namespace {

int32_t scan(const std::vector<std::string>& texts, std::string_view text) {
  for (size_t i = 0; i < texts.size(); ++i)
    if (texts[i] == text) return static_cast<int32_t>(i);
  return -1;
}

TEST(TokenIndex, FindsWhatAScanFinds) {
  std::mt19937 rng(3);
  std::vector<std::string> texts = {"", "a", "a", "ab", "b"};  // a repeat: the first id wins
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) t += static_cast<char>('a' + rng() % 5);
    texts.push_back(t);  // short random texts: many repeats too
  }
  const TokenIndex index(texts.data(), texts.size());
  EXPECT_EQ(index.find(""), 0);
  EXPECT_EQ(index.find("a"), 1);
  for (const std::string& t : texts) EXPECT_EQ(index.find(t), scan(texts, t)) << t;
  for (const char* absent : {"zz", "abcdefgh", "A"}) EXPECT_EQ(index.find(absent), -1) << absent;
  EXPECT_EQ(TokenIndex().find("a"), -1);
}

}  // namespace
}  // namespace fulgur
