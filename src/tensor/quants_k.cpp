// K-quants (256-element super-blocks): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and the Q8_K activation
// format. Dequantizers follow ggml's loops and float evaluation order exactly; quantizers fit each
// sub-block with quants_fit.cpp, quantize the sub-block scales against one f16 super-scale (as
// ggml does), then re-pick every level for the scales actually stored.
//
// In every K-quant, sub-block g covers the contiguous elements [g*size, (g+1)*size); only the
// placement of the level bits differs. The packers below say where element e's bits go.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {

void dequantize_q2_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        // Two groups of 16 per shift: bytes q[0..15] then q[16..31], each with its own scale.
        for (int g = 0; g < 2; ++g) {
          const uint8_t sc = b[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF),
                      ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l)
            *dst++ = dl * static_cast<float>((q[l + 16 * g] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    int8_t scales[16];
    unpack_q3_k_scales(b[i].scales, scales);
    const uint8_t* q = b[i].qs;
    uint8_t m = 1;  // high-bit mask: one bit per (half, shift), continuing across halves
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int g = 0; g < 2; ++g) {
          const float dl = d * static_cast<float>(scales[is++]);
          for (int l = 16 * g; l < 16 * g + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((b[i].hmask[l] & m) ? 0 : 4);
            *dst++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequantize_q4_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int c = 0; c < 4; ++c, q += 32) {
      uint8_t sc, m;
      get_scale_min_k4(2 * c, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(2 * c + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q5_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    for (int c = 0; c < 4; ++c, ql += 32) {
      uint8_t sc, m;
      get_scale_min_k4(2 * c, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(2 * c + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      const uint8_t u1 = static_cast<uint8_t>(1u << (2 * c)),
                    u2 = static_cast<uint8_t>(2u << (2 * c));
      for (int l = 0; l < 32; ++l)
        *dst++ = d1 * static_cast<float>((ql[l] & 0xF) + ((b[i].qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *dst++ = d2 * static_cast<float>((ql[l] >> 4) + ((b[i].qh[l] & u2) ? 16 : 0)) - m2;
    }
  }
}

void dequantize_q6_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_q8_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) dst[j] = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

namespace {

// Result of fitting one super-block with an unsigned (scale, min) per sub-block, both quantized
// to `sbits` bits against f16 super-scales d and dmin.
struct AffineFit {
  uint16_t d, dmin;  // f16
  uint8_t sc[16];    // [n_sub] quantized scales
  uint8_t m[16];     // [n_sub] quantized mins
  uint8_t L[kQK_K];  // [256] levels 0..nmax for the stored scales
};

void fit_affine_superblock(const float* x, int sub, int nmax, int smax, AffineFit* out, const float* w) {
  const int n_sub = kQK_K / sub;
  float scales[16], mins[16];  // [n_sub]
  float max_scale = 0.0f, max_min = 0.0f;
  for (int g = 0; g < n_sub; ++g) {
    scales[g] = fit_scale_min(x + g * sub, sub, nmax, out->L + g * sub, &mins[g], w != nullptr ? w + g * sub : nullptr);
    max_scale = std::fmax(max_scale, scales[g]);
    max_min = std::fmax(max_min, mins[g]);
  }
  const float d = max_scale / static_cast<float>(smax), dmin = max_min / static_cast<float>(smax);
  out->d = f32_to_f16(d);
  out->dmin = f32_to_f16(dmin);
  const float id = d > 0 ? 1.0f / d : 0.0f, idmin = dmin > 0 ? 1.0f / dmin : 0.0f;
  const float d16 = f16_to_f32(out->d), dmin16 = f16_to_f32(out->dmin);
  for (int g = 0; g < n_sub; ++g) {
    out->sc[g] = static_cast<uint8_t>(round_clamp(scales[g] * id, 0, smax));
    out->m[g] = static_cast<uint8_t>(round_clamp(mins[g] * idmin, 0, smax));
    const float dl = d16 * out->sc[g], ml = dmin16 * out->m[g];
    for (int l = g * sub; l < (g + 1) * sub; ++l)
      out->L[l] = static_cast<uint8_t>(dl > 0 ? round_clamp((x[l] + ml) / dl, 0, nmax) : 0);
  }
}

// Signed counterpart: one signed scale per sub-block quantized to an integer in [-sneg, spos]
// against one f16 d, levels in [-nneg, npos].
struct SymmetricFit {
  uint16_t d;       // f16
  int8_t sc[16];    // [16] quantized scales
  int8_t L[kQK_K];  // [256] levels
};

void fit_symmetric_superblock(const float* x, int nneg, int npos, int sneg, int spos,
                              SymmetricFit* out, const float* w) {
  constexpr int kSub = 16;
  float scales[16];  // [16]
  float amax = 0.0f, max = 0.0f;
  for (int g = 0; g < 16; ++g) {
    scales[g] = fit_scale_symmetric(x + g * kSub, kSub, nneg, npos, out->L + g * kSub,
                                    w != nullptr ? w + g * kSub : nullptr);
    if (std::fabs(scales[g]) > amax) {
      amax = std::fabs(scales[g]);
      max = scales[g];
    }
  }
  // The largest scale takes -sneg, the end with the extra level, as for the elements.
  const float iscale = max != 0.0f ? -static_cast<float>(sneg) / max : 0.0f;
  out->d = f32_to_f16(iscale != 0.0f ? 1.0f / iscale : 0.0f);
  const float d16 = f16_to_f32(out->d);
  for (int g = 0; g < 16; ++g) {
    out->sc[g] = static_cast<int8_t>(round_clamp(scales[g] * iscale, -sneg, spos));
    const float dl = d16 * out->sc[g];
    for (int l = g * kSub; l < (g + 1) * kSub; ++l)
      out->L[l] = static_cast<int8_t>(dl != 0.0f ? round_clamp(x[l] / dl, -nneg, npos) : 0);
  }
}

}  // namespace

void quantize_q2_k(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  AffineFit fit;
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    fit_affine_superblock(src, 16, 3, 15, &fit, w != nullptr ? w + i * kQK_K : nullptr);
    b[i].d = fit.d;
    b[i].dmin = fit.dmin;
    for (int g = 0; g < 16; ++g) b[i].scales[g] = static_cast<uint8_t>(fit.sc[g] | (fit.m[g] << 4));
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    // Element e = 128*half + 32*j + l sits in byte 32*half + l at bit 2*j.
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, j = (e % 128) / 32, l = e % 32;
      b[i].qs[32 * half + l] |= static_cast<uint8_t>(fit.L[e] << (2 * j));
    }
  }
}

void quantize_q3_k(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  SymmetricFit fit;
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    fit_symmetric_superblock(src, 4, 3, 32, 31, &fit,
                             w != nullptr ? w + i * kQK_K : nullptr);
    b[i].d = fit.d;
    pack_q3_k_scales(fit.sc, b[i].scales);
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
    // Stored level u = L + 4 in 0..7: the low 2 bits go where Q2_K puts them; bit 2 (set means
    // "do not subtract 4") goes to hmask[l] at bit 4*half + j.
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, j = (e % 128) / 32, l = e % 32;
      const int u = fit.L[e] + 4;
      b[i].qs[32 * half + l] |= static_cast<uint8_t>((u & 3) << (2 * j));
      b[i].hmask[l] |= static_cast<uint8_t>((u >> 2) << (4 * half + j));
    }
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  AffineFit fit;
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    fit_affine_superblock(src, 32, 15, 63, &fit, w != nullptr ? w + i * kQK_K : nullptr);
    b[i].d = fit.d;
    b[i].dmin = fit.dmin;
    pack_scale_min_k4(fit.sc, fit.m, b[i].scales);
    // Element e = 64*c + r: byte 32*c + r%32, low nibble for r < 32, high nibble otherwise.
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l)
        b[i].qs[32 * c + l] =
            static_cast<uint8_t>(fit.L[64 * c + l] | (fit.L[64 * c + 32 + l] << 4));
    }
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  AffineFit fit;
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    fit_affine_superblock(src, 32, 31, 63, &fit, w != nullptr ? w + i * kQK_K : nullptr);
    b[i].d = fit.d;
    b[i].dmin = fit.dmin;
    pack_scale_min_k4(fit.sc, fit.m, b[i].scales);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    // As Q4_K for the low 4 bits; bit 4 of element 64*c + 32*h + l goes to qh[l] bit 2*c + h.
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = fit.L[64 * c + l], hi = fit.L[64 * c + 32 + l];
        b[i].qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        b[i].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  SymmetricFit fit;
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    fit_symmetric_superblock(src, 32, 31, 128, 127, &fit,
                             w != nullptr ? w + i * kQK_K : nullptr);
    b[i].d = fit.d;
    std::memcpy(b[i].scales, fit.sc, 16);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    // Element e = 128*half + 32*p + l (u = L + 32 in 0..63): low nibble in ql[64*half + l +
    // 32*(p&1)] (low nibble for p < 2, high for p >= 2); the top 2 bits in qh[32*half + l] at bit
    // 2*p.
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, p = (e % 128) / 32, l = e % 32;
      const int u = fit.L[e] + 32;
      uint8_t& lo = b[i].ql[64 * half + l + 32 * (p & 1)];
      if (p < 2)
        lo = static_cast<uint8_t>((lo & 0xF0) | (u & 0xF));
      else
        lo = static_cast<uint8_t>((lo & 0x0F) | ((u & 0xF) << 4));
      b[i].qh[32 * half + l] |= static_cast<uint8_t>((u >> 4) << (2 * p));
    }
  }
}

void quantize_q8_k(const float* src, void* dst, int64_t nb) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < nb; ++i, src += kQK_K) {
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) amax = std::fmax(amax, std::fabs(src[j]));
    // Unlike ggml (d = -max/127, sign of the largest element) d is always >= 0; dot products
    // only need d * qs to be the value.
    const float iscale = amax > 0 ? 127.0f / amax : 0.0f;
    b[i].d = amax > 0 ? 1.0f / iscale : 0.0f;
    for (int j = 0; j < kQK_K; ++j)
      b[i].qs[j] = static_cast<int8_t>(round_clamp(src[j] * iscale, -127, 127));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * g + l];
      b[i].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace fulgur::detail
