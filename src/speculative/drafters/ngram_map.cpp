#include "speculative/drafters/ngram_map.h"

#include <algorithm>

#include "core/error.h"
#include "model/batch.h"

namespace fulgur {
namespace {

// llama.cpp's key hash: a multiplicative (LCG-style) hash over 32 bits.
uint32_t key_hash(const int32_t* tokens, int n) {
  uint32_t h = 0;
  for (int i = 0; i < n; ++i) h = h * 2654435761u + static_cast<uint32_t>(tokens[i]);
  return h;
}

}  // namespace

void NgramMapDrafter::check(const NgramMapParams& p, const char* prefix) {
  FULGUR_CHECK(p.size_n >= 1 && p.size_n <= 1024, prefix, "-size-n ", p.size_n, " must be in [1, 1024]");
  FULGUR_CHECK(p.size_m >= 1 && p.size_m <= 1024, prefix, "-size-m ", p.size_m, " must be in [1, 1024]");
  FULGUR_CHECK(p.min_hits >= 1, prefix, "-min-hits ", p.min_hits, " must be >= 1");
}

NgramMapDrafter::NgramMapDrafter(NgramMapParams params, bool key_only)
    : params_(params), key_only_(key_only), states_(kMaxSequences) {
  check(params_, key_only ? "--spec-ngram-map-k" : "--spec-ngram-map-k4v");
}

void NgramMapDrafter::on_reset(int seq) {
  State& st = states_[static_cast<size_t>(seq)];
  std::vector<uint32_t> slots = std::move(st.slots);
  std::fill(slots.begin(), slots.end(), 0u);
  st = State{};
  st.slots = std::move(slots);
}

void NgramMapDrafter::on_truncate(int seq, int64_t length) {
  State& st = states_[static_cast<size_t>(seq)];
  const int64_t n = params_.size_n, m = params_.size_m;
  // A hashed position j stands for a key at j and an m-gram after it that ends before the last
  // token: j <= length - n - m - 1 keeps it.
  const int64_t last_valid = length - n - m - 1;
  for (uint32_t& s : st.slots) {
    if (s != 0 && static_cast<int64_t>(s) > last_valid) s = 0;
  }
  st.hashed_to = std::min(st.hashed_to, std::max<int64_t>(last_valid, 0));
  // A key whose position or counts reach the dropped tokens goes, with its values.
  std::erase_if(st.keys, [&](const Key& k) { return std::max(k.at, k.counted_to) + n + m > length; });
  st.begin = std::min(st.begin, length);
  st.begun = false;
  st.last_key = -1;
}

void NgramMapDrafter::on_accepted(int seq, int accepted, int drafted, int proposed) {
  State& st = states_[static_cast<size_t>(seq)];
  if (st.last_key < 0) return;
  // A draft the loop cut short (to the scheduler's length) and accepted whole says nothing against
  // the key's longer drafts: its length stays. Otherwise the next draft is as long as what was
  // accepted now, as in llama.cpp (where a cut is rare: its limit is the context's room).
  if (accepted == drafted && drafted < proposed) {
    st.last_key = -1;
    return;
  }
  st.keys[static_cast<size_t>(st.last_key)].values[st.last_value].last_accepted = accepted;
  st.last_key = -1;
}

void NgramMapDrafter::begin(State& st, int64_t length) {
  if (st.slots.empty()) st.slots.assign(kHashSlots, 0u);
  st.begin = length;
  st.begun = true;
}

int64_t NgramMapDrafter::find(State& st, const std::vector<int32_t>& h, const int32_t* key) const {
  const int n = params_.size_n, m = params_.size_m;
  const int64_t len = static_cast<int64_t>(h.size());
  const int64_t top = len - n - m - 1;  // the latest start position with an m-gram and one more token
  // The hash table holds the positions scanned by earlier drafts (a collision just misses).
  const uint32_t at = st.slots[key_hash(key, n) % kHashSlots];
  if (at != 0 && static_cast<int64_t>(at) < top && ngram_equal(h.data() + at, key, n)) return at;
  // Newest first among positions not hashed yet: the prompt's, then the generated ones. Position
  // 0 is never a match (0 means none in the table).
  const int64_t prompt_top = st.begin - n - m - 1;
  for (int64_t j = prompt_top; j > st.hashed_to && prompt_top > 0; --j) {
    if (ngram_equal(h.data() + j, key, n)) return j;
  }
  for (int64_t j = top; j > st.begin && j > st.hashed_to; --j) {
    if (ngram_equal(h.data() + j, key, n)) return j;
  }
  return 0;
}

void NgramMapDrafter::hash_new(State& st, const std::vector<int32_t>& h) const {
  const int n = params_.size_n, m = params_.size_m;
  const int64_t len = static_cast<int64_t>(h.size());
  const int64_t top = len - n - m - 1;
  // In the scan's order, so that the newest position of each range takes a free slot.
  const auto add = [&](int64_t j) {
    uint32_t& s = st.slots[key_hash(h.data() + j, n) % kHashSlots];
    if (s == 0) s = static_cast<uint32_t>(j);
  };
  const int64_t prompt_top = st.begin - n - m - 1;
  for (int64_t j = prompt_top; j > st.hashed_to && prompt_top > 0; --j) add(j);
  for (int64_t j = top; j > st.begin && j > st.hashed_to; --j) add(j);
  st.hashed_to = std::max(top, st.hashed_to);
}

void NgramMapDrafter::propose(int seq, std::vector<int32_t>& h, int32_t anchor, int,
                              std::vector<int32_t>& out) {
  State& st = states_[static_cast<size_t>(seq)];
  const int n = params_.size_n, m = params_.size_m;
  const int64_t len = static_cast<int64_t>(h.size());
  if (!st.begun) begin(st, len);
  st.last_key = -1;
  if (len < 2 * n + m) return;
  FULGUR_CHECK(len < static_cast<int64_t>(UINT32_MAX), "ngram-map: history of ", len, " tokens is too long");
  // The key: the last n - 1 committed tokens and the anchor.
  std::vector<int32_t> key(h.end() - (n - 1), h.end());
  key.push_back(anchor);
  const int64_t match = find(st, h, key.data());
  hash_new(st, h);
  if (match == 0) return;

  auto it = std::find_if(st.keys.begin(), st.keys.end(),
                         [&](const Key& k) { return ngram_equal(h.data() + k.at, key.data(), n); });
  if (it == st.keys.end()) {
    Key k;
    k.at = match;
    for (Value& v : k.values) v.last_accepted = m;
    st.keys.push_back(k);
    it = st.keys.end() - 1;
  }
  Key& k = *it;
  const int key_index = static_cast<int>(it - st.keys.begin());
  k.hits = std::min(k.hits + 1, kMaxCount);

  int value = 0;
  if (!key_only_) {
    if (k.hits < params_.min_hits) return;
    // Count the m-grams after the key's occurrences since the last count (that position again
    // included, as llama.cpp does), up to the match; up to kMaxValues distinct ones are kept.
    for (int64_t i = k.counted_to; i <= match; ++i) {
      if (!ngram_equal(h.data() + i, key.data(), n)) continue;
      const int64_t after = i + n;
      for (Value& v : k.values) {
        if (v.at == 0) {
          v = Value{.at = after, .count = 1, .last_accepted = m};
          break;
        }
        if (ngram_equal(h.data() + after, h.data() + v.at, m)) {
          v.count = std::min(v.count + 1, kMaxCount);
          break;
        }
      }
    }
    k.counted_to = match;
    int best = 0, others = 0;
    for (int v = 0; v < kMaxValues; ++v) {
      if (k.values[v].count > k.values[best].count) best = v;
    }
    for (int v = 0; v < kMaxValues; ++v) others += v == best ? 0 : k.values[v].count;
    // Draft only when the most frequent m-gram is at least twice as frequent as the rest.
    if (others > 0 && k.values[best].count < 2 * others) return;
    value = best;
  }
  const int n_draft = std::min(m, k.values[value].last_accepted);
  for (int i = 0; i < n_draft; ++i) out.push_back(h[static_cast<size_t>(match + n + i)]);
  st.last_key = key_index;
  st.last_value = value;
}

}  // namespace fulgur
