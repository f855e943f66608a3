// The ISA-flagged entry points the tile formats (kernels/pack/*.cpp) put in their PackFormat:
// the AVX2 packers (kernels/avx2/pack.cpp) and the tile kernels of each ISA
// (kernels/avx2/tiles_*.cpp, kernels/avx512/tiles_*.cpp). Declarations only: the files that define
// them are compiled with other flags (the ODR rule of quant_act.h).
#pragma once

#include <cstdint>

namespace fulgur::kernels {

struct WeightView;
struct MatmulTask;

namespace avx2 {
void pack_tile_q8_0(const WeightView& src, int64_t tile, uint8_t* dst);
void pack_tile_b4(const WeightView& src, int64_t tile, uint8_t* dst);  // Q4_0, IQ4_NL
void pack_tile_iq4_xs(const WeightView& src, int64_t tile, uint8_t* dst);
void pack_tile_q4_k(const WeightView& src, int64_t tile, uint8_t* dst);  // Q4_K, Q5_K
void pack_tile_q6_k(const WeightView& src, int64_t tile, uint8_t* dst);
}  // namespace avx2

// y = W x over 16-row tiles, the same signature and the same bits in both ISAs (PackFormat).
#define FULGUR_TILE_KERNELS(isa)                                                                    \
  namespace isa {                                                                                   \
  void packed_rect_q8_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);     \
  void packed_rect_q4_0(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);     \
  void packed_rect_iq4_nl(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);   \
  void packed_rect_iq4_xs(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);   \
  void packed_rect_q4_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);     \
  void packed_rect_q5_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);     \
  void packed_rect_q6_k(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1);     \
  }
FULGUR_TILE_KERNELS(avx2)
FULGUR_TILE_KERNELS(avx512)
#undef FULGUR_TILE_KERNELS

}  // namespace fulgur::kernels
