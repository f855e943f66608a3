// The host-memory prompt cache's bookkeeping (server/prompt_cache.h): the longest servable
// prefix wins, what a state cannot be restored to is not offered, least recently used entries go
// first when the budget is reached, an entry another covers is replaced or not stored, and one
// larger than the whole budget is not kept.
#include <gtest/gtest.h>

#include "server/prompt_cache.h"

namespace fulgur::server {
namespace {

std::vector<int32_t> tokens(int first, int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

// An attention-only state of n positions whose copy takes about `bytes`.
SeqState state(int32_t n, int64_t bytes = 1000) {
  SeqState s;
  s.n_pos = n;
  s.kv[0].pos.resize(static_cast<size_t>(n));
  s.kv[0].kv = PageBuffer(static_cast<size_t>(bytes));
  return s;
}

int64_t entry_bytes(int32_t n, int64_t bytes = 1000) { return state(n, bytes).bytes() + n * 4; }

TEST(PromptCache, TheEntryServingTheLongestPrefixWins) {
  PromptCache c(1 << 20);
  c.put(tokens(0, 10), state(10));
  c.put(tokens(100, 30), state(30));
  std::vector<int32_t> prompt = tokens(100, 20);
  prompt.push_back(7);
  const PromptCache::Hit h = c.find(prompt, 100);
  ASSERT_NE(h.entry, nullptr);
  EXPECT_EQ(h.keep, 20);
  EXPECT_EQ(h.entry->tokens.front(), 100);
  // The limit caps what is kept (the server prefills at least the prompt's last token).
  EXPECT_EQ(c.find(prompt, 5).keep, 5);
  EXPECT_EQ(c.find(tokens(500, 8), 100).entry, nullptr);
}

TEST(PromptCache, OnlyPositionsTheStateCanBeRestoredToAreOffered) {
  PromptCache c(1 << 20);
  SeqState s = state(30);
  s.recurrent = true;
  s.rs.next = 30;
  s.rs.checkpoint = 12;
  c.put(tokens(0, 30), std::move(s));
  EXPECT_EQ(c.find(tokens(0, 40), 100).keep, 30);  // continues all of it
  EXPECT_EQ(c.find(tokens(0, 20), 100).keep, 12);  // back to the checkpoint
  EXPECT_EQ(c.find(tokens(0, 11), 100).entry, nullptr);
}

TEST(PromptCache, LeastRecentlyUsedEntriesGoFirstWhenTheBudgetIsReached) {
  const int64_t one = entry_bytes(10);
  PromptCache c(3 * one);
  c.put(tokens(0, 10), state(10));
  c.put(tokens(100, 10), state(10));
  c.put(tokens(200, 10), state(10));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.bytes(), 3 * one);
  ASSERT_NE(c.find(tokens(0, 10), 100).entry, nullptr);  // used: now the newest
  c.put(tokens(300, 10), state(10));                     // evicts the entry of 100
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.find(tokens(100, 10), 100).entry, nullptr);
  EXPECT_NE(c.find(tokens(0, 10), 100).entry, nullptr);
  EXPECT_NE(c.find(tokens(200, 10), 100).entry, nullptr);
  EXPECT_LE(c.bytes(), c.budget());
}

TEST(PromptCache, AnEntryThatAnotherExtendsIsReplacedAndOneOverTheBudgetIsNotKept) {
  PromptCache c(entry_bytes(40) + entry_bytes(10));
  c.put(tokens(0, 10), state(10));
  c.put(tokens(0, 25), state(25));  // extends the first: replaces it
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.bytes(), entry_bytes(25));
  c.put(tokens(900, 10), state(10, int64_t{1} << 30));  // larger than the budget
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.find(tokens(900, 10), 100).entry, nullptr);
  c.put({}, state(0));  // nothing to key it by
  EXPECT_EQ(c.size(), 1u);
}

TEST(PromptCache, AnEntryAnotherCoversIsNotStoredUnlessOnlyItRestoresItsEnd) {
  PromptCache c(1 << 20);
  c.put(tokens(0, 25), state(25));
  c.put(tokens(100, 10), state(10));  // now the newest
  c.put(tokens(0, 10), state(10));    // covered by the first: not stored, the first used
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.bytes(), entry_bytes(25) + entry_bytes(10));
  const PromptCache::Hit h = c.find(tokens(0, 12), 100);
  ASSERT_NE(h.entry, nullptr);
  EXPECT_EQ(h.entry->tokens.size(), 25u);

  // A recurrent state restorable only at its end cannot serve a shorter prompt's end: both stay,
  // whichever comes first.
  auto recurrent = [](int32_t n) {
    SeqState s = state(n);
    s.recurrent = true;
    s.rs.next = n;
    return s;
  };
  PromptCache r(1 << 20);
  r.put(tokens(0, 30), recurrent(30));
  r.put(tokens(0, 12), recurrent(12));
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.find(tokens(0, 20), 100).keep, 12);
  PromptCache r2(1 << 20);
  r2.put(tokens(0, 12), recurrent(12));
  r2.put(tokens(0, 30), recurrent(30));
  EXPECT_EQ(r2.size(), 2u);
  EXPECT_EQ(r2.find(tokens(0, 20), 100).keep, 12);
}

}  // namespace
}  // namespace fulgur::server
