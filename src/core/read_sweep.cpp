#include "core/read_sweep.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace fulgur {

uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += p[i + j];
  for (; i < n; ++i) s[0] += p[i];
  uint64_t t = 0;
  for (uint64_t v : s) t += v;
  return t;
}

uint64_t read_all(std::span<const std::span<const uint8_t>> ranges, ThreadPool& pool) {
  // Each range as whole aligned words, and where it starts in the concatenation of them all.
  struct Words {
    const uint64_t* p;
    size_t n, start;
  };
  std::vector<Words> words;
  size_t total = 0;
  for (std::span<const uint8_t> r : ranges) {
    const auto a = reinterpret_cast<uintptr_t>(r.data()), e = a + r.size();
    const uintptr_t a8 = (a + 7) / 8 * 8, e8 = e / 8 * 8;
    if (e8 <= a8) continue;
    words.push_back({reinterpret_cast<const uint64_t*>(a8), (e8 - a8) / 8, total});
    total += (e8 - a8) / 8;
  }
  std::vector<uint64_t> sums(static_cast<size_t>(pool.size()) * 8);  // a cache line per thread
  pool.run([&](int ti, int nt) {
    // Thread ti reads words [b, e) of the concatenation, split on cache lines.
    const size_t b = total * ti / nt / 8 * 8, e = ti + 1 == nt ? total : total * (ti + 1) / nt / 8 * 8;
    uint64_t s = 0;
    for (const Words& w : words) {
      const size_t lo = std::max(b, w.start), hi = std::min(e, w.start + w.n);
      if (lo < hi) s += sum_words(w.p + (lo - w.start), hi - lo);
    }
    sums[static_cast<size_t>(ti) * 8] = s;
  });
  uint64_t s = 0;
  for (size_t i = 0; i < sums.size(); i += 8) s += sums[i];
  return s;
}

double read_seconds(std::span<const std::span<const uint8_t>> ranges, ThreadPool& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  volatile uint64_t keep = read_all(ranges, pool);  // the sum must be observable
  (void)keep;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fulgur
