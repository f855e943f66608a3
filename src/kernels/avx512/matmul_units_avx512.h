// Internal to matmul_avx512.cpp (included once, inside its anonymous namespace): the weight
// "units" of every int8-path type. A unit is the smallest whole number of ggml blocks that fills
// 64-element chunks (two 32-blocks, one NVFP4 block, or one K-quant super-block of 4 chunks).
// unpack() turns it into, per chunk:
//   wu  [64] u8   the block's quant codes, offset to be unsigned (vpdpbusd takes u8 x s8)
//   vdw [16] f32  the weight scale of each 4-element lane (groups of 16 or 32 -> lanes)
// and, per 16-element group, wc = mw - c * dw: the coefficient of the activation group sum that
// undoes the offset c and adds a min/offset term mw. So a weight element is x = dw * (u - c) + mw
// and sum_i x_i a_i = sum_lanes dw * dot(u, a) + sum_groups wc * sum(a).
// No inline code visible outside this translation unit: everything here has internal linkage.

// f16 bits at p -> f32 (F16C; avoids core/fp16.h's inline functions, see the ODR note there).
static inline float ld_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
static inline uint32_t ld_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 16 bytes of nibbles -> 32 bytes in Q4_0 order: low nibbles first, then high nibbles.
static inline __m256i nibbles_q4(const uint8_t* qs) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(0x0F));
}

// A 16-entry byte table (kIq4nlValues / kMxfp4Values) + 128, in every 128-bit lane.
struct Lut16 {
  alignas(16) uint8_t v[16];
};
constexpr Lut16 plus_128(const int8_t* values) {
  Lut16 t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<uint8_t>(values[i] + 128);
  return t;
}
constexpr Lut16 kIq4nlLut = plus_128(kIq4nlValues);
constexpr Lut16 kMxfp4Lut = plus_128(kMxfp4Values);
static inline __m256i lut256(const Lut16& t) {
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.v)));
}

// Scale tables for the FP4 types, built once from the tensor module's reference decoders so the
// kernels agree with dequantize_row bit for bit.
struct ScaleTable {
  float v[256];
};
static const float* e8m0_half_table() {
  static const ScaleTable t = [] {
    ScaleTable s{};
    for (int i = 0; i < 256; ++i) s.v[i] = e8m0_to_f32_half(static_cast<uint8_t>(i));
    return s;
  }();
  return t.v;
}
static const float* ue4m3_half_table() {
  static const ScaleTable t = [] {
    ScaleTable s{};
    for (int i = 0; i < 256; ++i) s.v[i] = ue4m3_to_f32_half(static_cast<uint8_t>(i));
    return s;
  }();
  return t.v;
}

// ---- 32-element blocks: load(p, dw, wc) -> 32 u8 codes --------------------------------------

struct BQ8_0 {
  static constexpr int64_t kBytes = 34;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = ld_f16(p);
    wc = -128.0f * dw;  // int8 q -> u8 q + 128
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    return _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
  }
};
struct BQ4_0 {
  static constexpr int64_t kBytes = 18;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = ld_f16(p);
    wc = -8.0f * dw;
    return nibbles_q4(p + 2);
  }
};
struct BQ4_1 {
  static constexpr int64_t kBytes = 20;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = ld_f16(p);
    wc = ld_f16(p + 2);
    return nibbles_q4(p + 4);
  }
};
// Q5: bit j of the LE u32 qh is bit 4 of element j.
static inline __m256i with_bit4(__m256i v, uint32_t qh) {
  return _mm256_mask_add_epi8(v, _cvtu32_mask32(qh), v, _mm256_set1_epi8(0x10));
}
struct BQ5_0 {
  static constexpr int64_t kBytes = 22;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = ld_f16(p);
    wc = -16.0f * dw;
    return with_bit4(nibbles_q4(p + 6), ld_u32(p + 2));
  }
};
struct BQ5_1 {
  static constexpr int64_t kBytes = 24;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = ld_f16(p);
    wc = ld_f16(p + 2);
    return with_bit4(nibbles_q4(p + 8), ld_u32(p + 4));
  }
};
struct BIQ4_NL {
  static constexpr int64_t kBytes = 18;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = ld_f16(p);
    wc = -128.0f * dw;
    return _mm256_shuffle_epi8(lut256(kIq4nlLut), nibbles_q4(p + 2));
  }
};
struct BMXFP4 {
  static constexpr int64_t kBytes = 17;
  static __m256i load(const uint8_t* p, float& dw, float& wc) {
    dw = e8m0_half_table()[p[0]];
    wc = -128.0f * dw;
    return _mm256_shuffle_epi8(lut256(kMxfp4Lut), nibbles_q4(p + 1));
  }
};

// Two 32-blocks per unit; an odd last block is paired with zeros (dw = 0, codes 0).
template <class B>
struct Pair {
  static constexpr int kChunks = 1;
  static constexpr int64_t kElems = 64;
  static void unpack(const uint8_t* row, int64_t u, int64_t nblocks, __m512i* wu, __m512* vdw,
                     float* wc) {
    const uint8_t* p = row + 2 * u * B::kBytes;
    float d0, c0, d1 = 0.0f, c1 = 0.0f;
    const __m256i lo = B::load(p, d0, c0);
    __m256i hi = _mm256_setzero_si256();
    if (2 * u + 1 < nblocks) hi = B::load(p + B::kBytes, d1, c1);
    wu[0] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    vdw[0] = _mm512_insertf32x8(_mm512_set1_ps(d0), _mm256_set1_ps(d1), 1);
    wc[0] = wc[1] = c0;
    wc[2] = wc[3] = c1;
  }
};

// ---- NVFP4: one 64-element block of 4 sub-blocks of 16 ----------------------------------------
struct UNVFP4 {
  static constexpr int kChunks = 1;
  static constexpr int64_t kElems = 64;
  static void unpack(const uint8_t* row, int64_t u, int64_t, __m512i* wu, __m512* vdw, float* wc) {
    const uint8_t* p = row + u * 36;
    const float* tab = ue4m3_half_table();
    const __m128 ds = _mm_setr_ps(tab[p[0]], tab[p[1]], tab[p[2]], tab[p[3]]);
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(x, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
    // Sub-block s holds qs[8s..8s+7]: its low nibbles, then its high nibbles. unpacklo_epi64
    // gives sub-blocks 0 and 2 (one per 128-bit lane), unpackhi 1 and 3; reorder the lanes.
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_unpacklo_epi64(lo, hi)),
                                         _mm256_unpackhi_epi64(lo, hi), 1);
    const __m512i codes = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
    const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kMxfp4Lut.v)));
    wu[0] = _mm512_shuffle_epi8(lut, codes);
    vdw[0] = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), _mm512_castps128_ps512(ds));
    _mm_storeu_ps(wc, _mm_mul_ps(ds, _mm_set1_ps(-128.0f)));
  }
};

// ---- K-quants: one 256-element super-block = 4 chunks -----------------------------------------

// Lane scales of chunk c from 8 per-32 scales: {2c x8, 2c+1 x8}.
static inline __m512 lanes_of_32(__m256 s8, int c) {
  const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * c), _mm256_set1_epi32(2 * c + 1), 1);
  return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(s8));
}
// Lane scales of chunk c from 16 per-16 scales: {4c x4, 4c+1 x4, 4c+2 x4, 4c+3 x4}.
static inline __m512 lanes_of_16(__m512 s16, int c) {
  const __m512i idx = _mm512_add_epi32(
      _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), _mm512_set1_epi32(4 * c));
  return _mm512_permutexvar_ps(idx, s16);
}
static inline __m256 u8x8_to_f32(uint64_t v) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(v))));
}
// Shift every byte of the lower 256 bits right by a, of the upper 256 bits by b (16-bit shifts;
// callers mask off what crosses from the neighbouring byte).
static inline __m512i shift_halves(__m512i v, int a, int b) {
  return _mm512_srlv_epi16(v, _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)),
                                                 _mm256_set1_epi16(static_cast<short>(b)), 1));
}
static inline __m512i bcast32(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Q4_K / Q5_K: 8 scales and 8 mins of 6 bits, packed in 12 bytes (blocks.h get_scale_min_k4).
static inline void scale_min_k4(const uint8_t* s, float d, float dmin, __m256* dsc, float* wc) {
  const uint32_t a = ld_u32(s), b = ld_u32(s + 4), c = ld_u32(s + 8);
  const uint32_t sc_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
  const uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
  *dsc = _mm256_mul_ps(u8x8_to_f32(sc_lo | (static_cast<uint64_t>(sc_hi) << 32)), _mm256_set1_ps(d));
  const __m256 mins =
      _mm256_mul_ps(u8x8_to_f32(m_lo | (static_cast<uint64_t>(m_hi) << 32)), _mm256_set1_ps(-dmin));
  // One min per 32 elements -> one coefficient per 16-group (each min twice).
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  _mm512_storeu_ps(wc, _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(mins)));
}

struct UQ4_K {
  static constexpr int kChunks = 4;
  static constexpr int64_t kElems = 256;
  static void unpack(const uint8_t* row, int64_t u, int64_t, __m512i* wu, __m512* vdw, float* wc) {
    const uint8_t* p = row + u * 144;
    __m256 dsc;
    scale_min_k4(p + 4, ld_f16(p), ld_f16(p + 2), &dsc, wc);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {  // chunk c: 32 bytes, low nibbles then high nibbles
      wu[c] = _mm512_and_si512(shift_halves(bcast32(p + 16 + 32 * c), 0, 4), m4);
      vdw[c] = lanes_of_32(dsc, c);
    }
  }
};

struct UQ5_K {
  static constexpr int kChunks = 4;
  static constexpr int64_t kElems = 256;
  static void unpack(const uint8_t* row, int64_t u, int64_t, __m512i* wu, __m512* vdw, float* wc) {
    const uint8_t* p = row + u * 176;
    __m256 dsc;
    scale_min_k4(p + 4, ld_f16(p), ld_f16(p + 2), &dsc, wc);
    const __m512i m4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
    const __m512i qh = bcast32(p + 16);
    for (int c = 0; c < 4; ++c) {  // bit 2c of qh[l] tops the low part, bit 2c+1 the high part
      const __m512i nib = _mm512_and_si512(shift_halves(bcast32(p + 48 + 32 * c), 0, 4), m4);
      const __m512i hb = _mm512_and_si512(shift_halves(qh, 2 * c, 2 * c + 1), one);
      wu[c] = _mm512_or_si512(nib, _mm512_slli_epi16(hb, 4));
      vdw[c] = lanes_of_32(dsc, c);
    }
  }
};

struct UQ6_K {
  static constexpr int kChunks = 4;
  static constexpr int64_t kElems = 256;
  static void unpack(const uint8_t* row, int64_t u, int64_t, __m512i* wu, __m512* vdw, float* wc) {
    const uint8_t* p = row + u * 210;
    const __m512 dsc = _mm512_mul_ps(
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192)))),
        _mm512_set1_ps(ld_f16(p + 208)));
    _mm512_storeu_ps(wc, _mm512_mul_ps(dsc, _mm512_set1_ps(-32.0f)));  // q in 0..63, offset 32
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {  // halves of 128: ql advances 64, qh 32
      const __m512i ql = _mm512_loadu_si512(p + 64 * h);
      const __m512i qh = bcast32(p + 128 + 32 * h);
      // Chunk 2h: low nibbles of ql[0..63] with qh bits 0-1 (first 32) and 2-3 (next 32);
      // chunk 2h+1: high nibbles with qh bits 4-5 and 6-7.
      const __m512i h0 = _mm512_and_si512(shift_halves(qh, 0, 2), m2);
      const __m512i h1 = _mm512_and_si512(shift_halves(qh, 4, 6), m2);
      wu[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(h0, 4));
      wu[2 * h + 1] =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), _mm512_slli_epi16(h1, 4));
      vdw[2 * h] = lanes_of_16(dsc, 2 * h);
      vdw[2 * h + 1] = lanes_of_16(dsc, 2 * h + 1);
    }
  }
};

// Q2_K / Q3_K element order: element 128h + 32j + l (l < 32) is bits 2j..2j+1 of qs[32h + l].
static inline __m512i q2_chunk(const uint8_t* qs, int c) {
  const int h = c / 2, j = 2 * (c % 2);
  return _mm512_and_si512(shift_halves(bcast32(qs + 32 * h), 2 * j, 2 * j + 2), _mm512_set1_epi8(3));
}

struct UQ2_K {
  static constexpr int kChunks = 4;
  static constexpr int64_t kElems = 256;
  static void unpack(const uint8_t* row, int64_t u, int64_t, __m512i* wu, __m512* vdw, float* wc) {
    const uint8_t* p = row + u * 84;
    const __m512i sb = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512 dsc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(sb, _mm512_set1_epi32(0xF))),
                                     _mm512_set1_ps(ld_f16(p + 80)));
    _mm512_storeu_ps(wc, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(sb, 4)),
                                       _mm512_set1_ps(-ld_f16(p + 82))));
    for (int c = 0; c < 4; ++c) {
      wu[c] = q2_chunk(p + 16, c);
      vdw[c] = lanes_of_16(dsc, c);
    }
  }
};

struct UQ3_K {
  static constexpr int kChunks = 4;
  static constexpr int64_t kElems = 256;
  static void unpack(const uint8_t* row, int64_t u, int64_t, __m512i* wu, __m512* vdw, float* wc) {
    const uint8_t* p = row + u * 110;
    // 16 scales of 6 bits (blocks.h unpack_q3_k_scales): low nibbles in bytes 0..7, high
    // 2-bit pairs in bytes 8..11; all four words are built from the original a2.
    const uint32_t a0 = ld_u32(p + 96), a1 = ld_u32(p + 100), a2 = ld_u32(p + 104);
    const uint32_t k4 = 0x0F0F0F0Fu, k2 = 0x03030303u;
    const __m128i sc = _mm_setr_epi32(static_cast<int>((a0 & k4) | ((a2 & k2) << 4)),
                                      static_cast<int>((a1 & k4) | (((a2 >> 2) & k2) << 4)),
                                      static_cast<int>(((a0 >> 4) & k4) | (((a2 >> 4) & k2) << 4)),
                                      static_cast<int>(((a1 >> 4) & k4) | (((a2 >> 6) & k2) << 4)));
    const __m512 dsc =
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(sc), _mm512_set1_epi32(32))),
                      _mm512_set1_ps(ld_f16(p + 108)));
    _mm512_storeu_ps(wc, _mm512_mul_ps(dsc, _mm512_set1_ps(-4.0f)));  // u = q + 4 * hbit, offset 4
    const __m512i hm = bcast32(p), one = _mm512_set1_epi8(1);
    for (int c = 0; c < 4; ++c) {  // the hmask bit for (half h, shift j) is bit 4h + j
      const int bit = 4 * (c / 2) + 2 * (c % 2);
      const __m512i hb = _mm512_and_si512(shift_halves(hm, bit, bit + 1), one);
      wu[c] = _mm512_or_si512(q2_chunk(p + 32, c), _mm512_slli_epi16(hb, 2));
      vdw[c] = lanes_of_16(dsc, c);
    }
  }
};
