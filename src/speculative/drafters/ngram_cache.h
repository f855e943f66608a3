// llama.cpp's ngram-cache (common/ngram-cache.*, the lookup decoding of llama-lookup): n-gram ->
// counts of the tokens that followed it, in three caches:
//  * context: built from the sequence's own tokens, 1- to 4-grams, per sequence;
//  * dynamic (--lookup-cache-dynamic FILE) and static (--lookup-cache-static FILE): loaded from
//    llama.cpp's cache files, shared and read-only (llama.cpp's speculative driver does not write
//    them back either; `llama-lookup-create` makes static ones).
// A draft adds tokens one at a time (at most 8, llama.cpp's fixed n_draft): the longest of the
// last 4..1 tokens found in the context cache whose most frequent follower has enough samples and
// share (lax thresholds) gives the token; failing that the dynamic cache (strict thresholds);
// failing that the static cache's 2-gram. Counts of the context and dynamic caches are weighted by
// 100 x the static cache's count for that token (1 when absent).
//
// The context cache grows at each draft by the tokens committed since the last one and the anchor,
// each counted after the n-grams that end before it, as llama-lookup updates it. (llama.cpp's
// speculative driver, common/speculative.cpp, passes only the new tokens to the update, so n-grams
// that start before them are never counted: with one new token a step, generated text never
// reaches its context cache. fulgur counts them.) A commit at an earlier position rebuilds the
// context cache from the kept history at the next draft.
// Ties between followers go to the smaller token id (llama.cpp: its hash map's order).
//
// The file format (llama.cpp's common_ngram_cache_save): records of 4 int32 n-gram tokens (-1 past
// the n-gram's size), int32 number of followers, then per follower int32 token and int32 count,
// little-endian, back to back.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "speculative/drafters/ngram_history.h"

namespace fulgur {

class NgramCache {
 public:
  static constexpr int kMaxN = 4;
  using Ngram = std::array<int32_t, kMaxN>;   // unused tail: -1
  using Followers = std::map<int32_t, int32_t>;  // token -> count

  // Counts, for each n in [n_min, n_max], the n-grams of `tokens` followed by one of its last
  // n_new tokens (llama.cpp's common_ngram_cache_update).
  void add(const std::vector<int32_t>& tokens, int64_t n_new, int n_min, int n_max);
  void add_count(const Ngram& g, int32_t token, int32_t count);
  const Followers* find(const Ngram& g) const;
  size_t size() const { return map_.size(); }
  void clear() { map_.clear(); }

  // llama.cpp's cache file. load throws fulgur::Error naming the file when it cannot be read or
  // is cut short.
  static NgramCache load(const std::string& path);
  void save(const std::string& path) const;

  static Ngram make(const int32_t* tokens, int n);

 private:
  struct Hash {
    size_t operator()(const Ngram& g) const;
  };
  std::unordered_map<Ngram, Followers, Hash> map_;
};

struct NgramCacheParams {
  std::string static_path;   // --lookup-cache-static (empty: none)
  std::string dynamic_path;  // --lookup-cache-dynamic (empty: none)
};

class NgramCacheDrafter : public NgramHistoryDrafter {
 public:
  static constexpr int kNDraft = 8;  // llama.cpp's fixed draft length for ngram-cache
  // Loads the cache files; throws fulgur::Error naming the option and file when one cannot be read.
  explicit NgramCacheDrafter(const NgramCacheParams& params);
  NgramCacheDrafter(NgramCache static_cache, NgramCache dynamic_cache);

  std::string name() const override { return "ngram-cache"; }
  int max_draft() const override { return kNDraft; }

 protected:
  void propose(int seq, std::vector<int32_t>& history, int32_t anchor, int n_max,
               std::vector<int32_t>& out) override;
  void on_reset(int seq) override;
  void on_truncate(int seq, int64_t length) override;

 private:
  struct Seq {
    NgramCache context;
    int64_t cached = 0;  // tokens (the anchor of the last draft included) counted in `context`
  };
  NgramCache static_, dynamic_;
  std::vector<Seq> seqs_;  // [kMaxSequences]
};

}  // namespace fulgur
