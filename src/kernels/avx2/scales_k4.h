// Q4_K / Q5_K's 8 six-bit scales and mins (blocks.h get_scale_min_k4) from their 12 packed bytes,
// as bytes, for the avx2 files (the matmul and the packer). Internal linkage (ODR, see
// quant_act.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace fulgur::kernels::avx2 {

// Byte j of *sc / *m: sub-block j's scale / min.
static inline void scales_mins_k4(const uint8_t* s, uint64_t* sc, uint64_t* m) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t sc_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
  const uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
  *sc = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  *m = m_lo | (static_cast<uint64_t>(m_hi) << 32);
}

}  // namespace fulgur::kernels::avx2
