// Helpers for the tensor tests: blocks are built as raw bytes at the offsets the reference
// (archs-gguf.md §1.7) gives, never through the structs in blocks.h, so a layout mistake there
// shows up as a wrong value here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace fulgur::test {

using Bytes = std::vector<uint8_t>;

inline void put_u16(Bytes& b, size_t off, uint16_t v) {
  b.at(off) = static_cast<uint8_t>(v & 0xFF);
  b.at(off + 1) = static_cast<uint8_t>(v >> 8);
}

inline void put_u32(Bytes& b, size_t off, uint32_t v) {
  for (int k = 0; k < 4; ++k) b.at(off + k) = static_cast<uint8_t>(v >> (8 * k));
}

inline uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// f16 bit patterns of a few exact values used as scales.
inline constexpr uint16_t kF16Quarter = 0x3400;   // 0.25
inline constexpr uint16_t kF16Half = 0x3800;      // 0.5
inline constexpr uint16_t kF16One = 0x3C00;       // 1.0
inline constexpr uint16_t kF16Two = 0x4000;       // 2.0
inline constexpr uint16_t kF16MinusTwo = 0xC000;  // -2.0

inline Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& v : b) v = static_cast<uint8_t>(rng() & 0xFF);
  return b;
}

inline std::vector<float> gaussian(size_t n, uint32_t seed, float mean = 0.0f, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// RMS(a - b) / RMS(b).
inline double relative_rms_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace fulgur::test
