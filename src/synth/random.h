// The deterministic value source of synthetic weights: a splitmix64 stream seeded by the model
// seed and a hash of the tensor's name, so any tensor (or row) can be drawn on its own and the
// GGUF and Hugging Face exports of one seed hold the same numbers.
#pragma once

#include <cstdint>
#include <string_view>

namespace fulgur::synth {

// splitmix64: tiny, seedable per tensor, plenty for random weights.
inline uint64_t next_u64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t name_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Uniform in [center - spread, center + spread].
inline float next_uniform(uint64_t& state, float center, float spread) {
  const double u = static_cast<double>(next_u64(state) >> 11) * 0x1.0p-53;  // [0, 1)
  return center + spread * static_cast<float>(2.0 * u - 1.0);
}

}  // namespace fulgur::synth
