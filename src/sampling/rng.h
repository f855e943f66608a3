// Seeded pseudo-random generator for sampling: xoshiro256** (Blackman & Vigna), seeded through
// splitmix64 so that any 64-bit seed (0 included) gives a well-mixed, non-zero state. Same seed
// -> same stream on every machine and run: sampling is reproducible.
#pragma once

#include <cstdint>

namespace fulgur {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    // splitmix64 expands the seed into four words; it never yields an all-zero state because
    // consecutive outputs are distinct values of a bijection.
    uint64_t x = seed;
    for (uint64_t& word : s_) {
      x += 0x9E3779B97F4A7C15ull;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      word = z ^ (z >> 31);
    }
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits (the full double mantissa), so u < p is exact to
  // far below float probability resolution.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4] = {};
};

}  // namespace fulgur
