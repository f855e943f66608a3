// llama.cpp's ngram-map-k and ngram-map-k4v (common/ngram-map.*, PR 18471): a per-sequence map
// from key n-grams of the history to what followed them.
//
// Each draft takes the key = the last size_n tokens (the anchor last) and looks for an earlier
// occurrence that leaves room for a whole m-gram after it and before the last token: first in a
// hash table of the key n-grams (2^18 slots, the first occurrence hashed into a slot keeps it),
// then by a backward scan over the positions not hashed yet (the prompt's first, then the
// generated ones). The keys found are kept with a hit count.
//  * ngram-map-k (key only): every match drafts the size_m tokens after it.
//  * ngram-map-k4v: a key drafts only from its min_hits-th hit on, after counting the (up to 4)
//    distinct m-grams seen after its occurrences; it drafts when the most frequent one is seen at
//    least twice as often as the others together (llama.cpp then copies the m-gram after the
//    match found, which is usually but not always that most frequent one; fulgur does the same).
// A draft is at most as long as the number of tokens accepted the last time that key (and
// m-gram) drafted, so a key whose draft was rejected outright drafts nothing again. (fulgur's
// scheduler may cut a draft shorter; a cut draft accepted whole leaves that length as it was.)
//
// fulgur's driver differs from llama-server's only in when the prompt "begins": llama.cpp's
// begin() runs after the prompt is read; here it runs at the first draft after a reset or after a
// commit at an earlier position (a prompt-cache reuse), where everything the map held about the
// dropped tokens is removed first.
#pragma once

#include <cstdint>
#include <vector>

#include "speculative/drafters/ngram_history.h"

namespace fulgur {

struct NgramMapParams {
  int size_n = 12;   // key n-gram (llama.cpp's --spec-ngram-map-k[4v]-size-n)
  int size_m = 48;   // drafted m-gram (--spec-ngram-map-k[4v]-size-m)
  int min_hits = 1;  // ngram-map-k4v: hits of a key before it drafts (--spec-ngram-map-k4v-min-hits)
};

class NgramMapDrafter : public NgramHistoryDrafter {
 public:
  // key_only: ngram-map-k, else ngram-map-k4v. Throws fulgur::Error naming the option (with the
  // prefix, e.g. "--spec-ngram-map-k4v") when a size is out of llama.cpp's ranges.
  NgramMapDrafter(NgramMapParams params, bool key_only);
  static void check(const NgramMapParams& params, const char* option_prefix);

  std::string name() const override { return key_only_ ? "ngram-map-k" : "ngram-map-k4v"; }
  int max_draft() const override { return params_.size_m; }

  static constexpr int kMaxValues = 4;           // m-grams kept per key
  static constexpr size_t kHashSlots = 1 << 18;  // key hash table size
  static constexpr int kMaxCount = 16380;        // counts saturate here

 protected:
  void propose(int seq, std::vector<int32_t>& history, int32_t anchor, int n_max,
               std::vector<int32_t>& out) override;
  void on_reset(int seq) override;
  void on_truncate(int seq, int64_t length) override;
  void on_accepted(int seq, int accepted, int drafted, int proposed) override;

 private:
  struct Value {
    int64_t at = 0;        // position of the m-gram in the history (0: slot unused)
    int count = 0;         // times seen after the key
    int last_accepted;     // tokens accepted when it last drafted (size_m before that)
  };
  struct Key {
    int64_t at = 0;        // a position of the key n-gram
    int64_t counted_to = 0;  // occurrences up to this position are in the counts
    int hits = 0;
    Value values[kMaxValues];
  };
  struct State {
    std::vector<Key> keys;
    std::vector<uint32_t> slots;  // [kHashSlots] key position by hash (0: empty); allocated on use
    int64_t hashed_to = 0;        // positions up to here are in `slots`
    int64_t begin = 0;            // history length when generation began
    bool begun = false;
    int last_key = -1;            // key and value of the last draft (-1: no draft)
    int last_value = 0;
  };

  void begin(State& st, int64_t length);
  int64_t find(State& st, const std::vector<int32_t>& h, const int32_t* key) const;
  void hash_new(State& st, const std::vector<int32_t>& h) const;

  NgramMapParams params_;
  bool key_only_;
  std::vector<State> states_;  // [kMaxSequences]
};

}  // namespace fulgur
