#include "speculative/drafters/ngram_cache.h"

#include <algorithm>
#include <bit>
#include <fstream>

#include "core/error.h"
#include "model/batch.h"

namespace fulgur {
namespace {

static_assert(std::endian::native == std::endian::little, "the cache files are little-endian");

// Sample size and share (percent) the most frequent follower needs, by n-gram size 1..4: lax for
// the context cache, strict for the dynamic one (llama.cpp's thresholds).
constexpr int kMinSamplesLax[NgramCache::kMaxN] = {2, 2, 1, 1};
constexpr int kMinPercentLax[NgramCache::kMaxN] = {66, 50, 50, 50};
constexpr int kMinSamplesStrict[NgramCache::kMaxN] = {4, 3, 2, 2};
constexpr int kMinPercentStrict[NgramCache::kMaxN] = {75, 66, 66, 66};
constexpr int kStaticN = 2;  // the static cache is looked up by 2-grams
constexpr int kContextMinN = 1, kContextMaxN = 4;
constexpr int32_t kNone = -1;

// The follower of the longest n-gram in `keys` (keys[i]: the last i + 1 tokens; absent ones are
// skipped) that passes the thresholds, weighted by the static cache's followers; kNone if none.
int32_t from_primary(const NgramCache& cache, const std::vector<const NgramCache::Ngram*>& keys,
                     const NgramCache::Followers* by_static, const int* min_samples, const int* min_percent) {
  for (int i = static_cast<int>(keys.size()) - 1; i >= 0; --i) {
    if (keys[static_cast<size_t>(i)] == nullptr) continue;
    const NgramCache::Followers* f = cache.find(*keys[static_cast<size_t>(i)]);
    if (f == nullptr) continue;
    int64_t best_count = 0, best_weight = 0, sum = 0;
    int32_t best = kNone;
    for (const auto& [token, count] : *f) {
      int64_t weight = 1;
      if (by_static != nullptr) {
        const auto it = by_static->find(token);
        if (it != by_static->end()) weight = 100 * static_cast<int64_t>(it->second);
      }
      if (count * weight > best_count * best_weight) {
        best = token;
        best_count = count;
        best_weight = weight;
      }
      sum += count;
    }
    if (sum < min_samples[i] || 100 * best_count < min_percent[i] * sum) continue;
    return best;
  }
  return kNone;
}

// The static cache alone: its most frequent follower of the 2-gram, with lax 2-gram thresholds.
int32_t from_static(const NgramCache::Followers* f) {
  if (f == nullptr) return kNone;
  int64_t best_count = 0, sum = 0;
  int32_t best = kNone;
  for (const auto& [token, count] : *f) {
    if (count > best_count) {
      best = token;
      best_count = count;
    }
    sum += count;
  }
  if (sum < kMinSamplesLax[kStaticN - 1] || 100 * best_count < kMinPercentLax[kStaticN - 1] * sum) return kNone;
  return best;
}

}  // namespace

size_t NgramCache::Hash::operator()(const Ngram& g) const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int32_t t : g) h = (h ^ static_cast<uint32_t>(t)) * 0xff51afd7ed558ccdull;
  return static_cast<size_t>(h ^ (h >> 29));
}

NgramCache::Ngram NgramCache::make(const int32_t* tokens, int n) {
  Ngram g;
  g.fill(-1);
  std::copy(tokens, tokens + n, g.begin());
  return g;
}

void NgramCache::add_count(const Ngram& g, int32_t token, int32_t count) { map_[g][token] += count; }

void NgramCache::add(const std::vector<int32_t>& tokens, int64_t n_new, int n_min, int n_max) {
  const int64_t size = static_cast<int64_t>(tokens.size());
  for (int n = n_min; n <= n_max; ++n) {
    for (int64_t i = std::max<int64_t>(size - n_new, n); i < size; ++i) {
      add_count(make(tokens.data() + (i - n), n), tokens[static_cast<size_t>(i)], 1);
    }
  }
}

const NgramCache::Followers* NgramCache::find(const Ngram& g) const {
  const auto it = map_.find(g);
  return it == map_.end() ? nullptr : &it->second;
}

NgramCache NgramCache::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in.good(), "n-gram cache '", path, "': cannot open it");
  NgramCache cache;
  const auto read = [&](void* p, size_t bytes) {
    in.read(static_cast<char*>(p), static_cast<std::streamsize>(bytes));
    return static_cast<size_t>(in.gcount());
  };
  int64_t record = 0;
  for (;; ++record) {
    Ngram g;
    const size_t got = read(g.data(), sizeof(g));
    if (got == 0 && in.eof()) break;
    FULGUR_CHECK(got == sizeof(g), "n-gram cache '", path, "': record ", record, " is cut short");
    int32_t n_followers = 0;
    FULGUR_CHECK(read(&n_followers, 4) == 4 && n_followers > 0, "n-gram cache '", path, "': record ", record,
                 " has a bad follower count");
    for (int32_t i = 0; i < n_followers; ++i) {
      int32_t tc[2];
      FULGUR_CHECK(read(tc, 8) == 8 && tc[1] > 0, "n-gram cache '", path, "': record ", record,
                   " is cut short or has a count <= 0");
      cache.add_count(g, tc[0], tc[1]);
    }
  }
  return cache;
}

void NgramCache::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  FULGUR_CHECK(out.good(), "n-gram cache '", path, "': cannot write it");
  for (const auto& [g, followers] : map_) {
    out.write(reinterpret_cast<const char*>(g.data()), sizeof(g));
    const int32_t n = static_cast<int32_t>(followers.size());
    out.write(reinterpret_cast<const char*>(&n), 4);
    for (const auto& [token, count] : followers) {
      const int32_t tc[2] = {token, count};
      out.write(reinterpret_cast<const char*>(tc), 8);
    }
  }
  FULGUR_CHECK(out.good(), "n-gram cache '", path, "': write failed");
}

namespace {
NgramCache load_option(const std::string& path, const char* option) {
  if (path.empty()) return {};
  try {
    return NgramCache::load(path);
  } catch (const Error& e) {
    fail(option, ": ", e.what());
  }
}
}  // namespace

NgramCacheDrafter::NgramCacheDrafter(const NgramCacheParams& params)
    : NgramCacheDrafter(load_option(params.static_path, "--lookup-cache-static"),
                        load_option(params.dynamic_path, "--lookup-cache-dynamic")) {}

NgramCacheDrafter::NgramCacheDrafter(NgramCache static_cache, NgramCache dynamic_cache)
    : static_(std::move(static_cache)), dynamic_(std::move(dynamic_cache)), seqs_(kMaxSequences) {}

void NgramCacheDrafter::on_reset(int seq) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  s.context.clear();
  s.cached = 0;
}

void NgramCacheDrafter::on_truncate(int seq, int64_t) { on_reset(seq); }

void NgramCacheDrafter::propose(int seq, std::vector<int32_t>& h, int32_t anchor, int n_max,
                                std::vector<int32_t>& out) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  const int64_t len = static_cast<int64_t>(h.size());
  // The input is the history and the anchor; the tokens new since the last draft are counted, as
  // the last token of n-grams that may start before them.
  h.push_back(anchor);
  if (s.cached < len + 1) {
    s.context.add(h, len + 1 - s.cached, kContextMinN, kContextMaxN);
    s.cached = len + 1;
  }
  // Drafted tokens extend the input; only its last few tokens are ever looked at.
  std::vector<int32_t> seq_tokens(h.begin() + std::max<int64_t>(0, len + 1 - NgramCache::kMaxN), h.end());
  h.pop_back();
  if (len + 1 < kStaticN) return;
  const int n_draft = std::min(kNDraft, n_max);
  std::vector<NgramCache::Ngram> grams(NgramCache::kMaxN);
  std::vector<const NgramCache::Ngram*> keys(NgramCache::kMaxN);
  for (int k = 0; k < n_draft; ++k) {
    const int64_t have = static_cast<int64_t>(seq_tokens.size());
    const int32_t* end = seq_tokens.data() + have;
    const NgramCache::Followers* by_static = static_.find(NgramCache::make(end - kStaticN, kStaticN));
    for (int n = 1; n <= NgramCache::kMaxN; ++n) {
      // (llama.cpp reads before the sequence's start for an n-gram longer than it; skipped here.)
      if (n > have || n > len + 1 + k) {
        keys[static_cast<size_t>(n - 1)] = nullptr;
        continue;
      }
      grams[static_cast<size_t>(n - 1)] = NgramCache::make(end - n, n);
      keys[static_cast<size_t>(n - 1)] = &grams[static_cast<size_t>(n - 1)];
    }
    int32_t t = from_primary(s.context, keys, by_static, kMinSamplesLax, kMinPercentLax);
    if (t == kNone) t = from_primary(dynamic_, keys, by_static, kMinSamplesStrict, kMinPercentStrict);
    if (t == kNone) t = from_static(by_static);
    if (t == kNone) break;
    out.push_back(t);
    seq_tokens.push_back(t);
    if (static_cast<int64_t>(seq_tokens.size()) > 2 * NgramCache::kMaxN) {
      seq_tokens.erase(seq_tokens.begin(), seq_tokens.end() - NgramCache::kMaxN);
    }
  }
}

}  // namespace fulgur
