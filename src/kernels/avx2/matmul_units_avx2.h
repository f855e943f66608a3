// Internal to matmul_avx2.cpp (included once, inside its anonymous namespace): the weight units
// of the int8-path types for AVX2 but Q4_K, Q5_K and Q6_K (kquant_avx2.h). A unit is the
// smallest whole number of ggml blocks that fills 32-element chunks. unpack() turns it into, per
// chunk:
//   ws  [32] s8   the element values in units of the group scale (|ws| <= 128, so the
//                 maddubs(|ws|, sign(a, ws)) trick stays below int16 saturation: 2*128*127)
//   vdw [8]  f32  the scale of each 4-element lane
// and, when kMins, wc[g] = mw per 16-element group (x = dw * ws + mw).
// Everything here has internal linkage (ODR, see quant_act.h).

// Pointers to R activation rows from r0, in quant_act.h's layout.
template <int R>
struct ActRows {
  const int8_t* q[R];  // int8 values
  const float* d[R];   // the scale of each 4-element lane
  const float* s[R];   // d * sum of each 16-element group
  ActRows(const ActQ8& a, int64_t r0) {
    for (int r = 0; r < R; ++r) {
      q[r] = a.q + (r0 + r) * a.kp;
      d[r] = a.d + (r0 + r) * (a.kp / 4);
      s[r] = a.s + (r0 + r) * (a.kp / 16);
    }
  }
};

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
static inline __m256i nibbles_q4(const uint8_t* qs) {  // low nibbles first, then high
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(0x0F));
}
// Byte i = 0x10 when bit i of x is set (the Q5 fifth bit).
static inline __m256i bit4_bytes(uint32_t x) {
  const __m256i v = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(x)),
      _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}
struct Lut16 {
  alignas(16) int8_t v[16];
};
constexpr Lut16 make_lut(const int8_t* values) {
  Lut16 t{};
  for (int i = 0; i < 16; ++i) t.v[i] = values[i];
  return t;
}
constexpr Lut16 kIq4nlLut = make_lut(kIq4nlValues);
constexpr Lut16 kMxfp4Lut = make_lut(kMxfp4Values);
static inline __m256i lut256(const Lut16& t) {
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.v)));
}
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
static inline __m256 lanes_2x4(float a, float b) {  // lanes 0-3 = a, 4-7 = b
  return _mm256_set_m128(_mm_set1_ps(b), _mm_set1_ps(a));
}

// ---- 32-element blocks: one chunk per unit ------------------------------------------------------
template <int64_t kBytes_, bool kMins_>
struct Blk {
  static constexpr int kChunks = 1;
  static constexpr int64_t kElems = 32;
  static constexpr int64_t kBytes = kBytes_;
  static constexpr bool kMins = kMins_;
};
struct UQ8_0 : Blk<34, false> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    vdw[0] = _mm256_set1_ps(ld_f16(p));
    ws[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
  }
};
struct UQ4_0 : Blk<18, false> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    vdw[0] = _mm256_set1_ps(ld_f16(p));
    ws[0] = _mm256_sub_epi8(nibbles_q4(p + 2), _mm256_set1_epi8(8));
  }
};
struct UQ4_1 : Blk<20, true> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float* wc) {
    vdw[0] = _mm256_set1_ps(ld_f16(p));
    wc[0] = wc[1] = ld_f16(p + 2);
    ws[0] = nibbles_q4(p + 4);
  }
};
struct UQ5_0 : Blk<22, false> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    vdw[0] = _mm256_set1_ps(ld_f16(p));
    const __m256i u = _mm256_or_si256(nibbles_q4(p + 6), bit4_bytes(ld_u32(p + 2)));
    ws[0] = _mm256_sub_epi8(u, _mm256_set1_epi8(16));
  }
};
struct UQ5_1 : Blk<24, true> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float* wc) {
    vdw[0] = _mm256_set1_ps(ld_f16(p));
    wc[0] = wc[1] = ld_f16(p + 2);
    ws[0] = _mm256_or_si256(nibbles_q4(p + 8), bit4_bytes(ld_u32(p + 4)));
  }
};
struct UIQ4_NL : Blk<18, false> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    vdw[0] = _mm256_set1_ps(ld_f16(p));
    ws[0] = _mm256_shuffle_epi8(lut256(kIq4nlLut), nibbles_q4(p + 2));
  }
};
struct UMXFP4 : Blk<17, false> {
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    vdw[0] = _mm256_set1_ps(e8m0_half_table()[p[0]]);
    ws[0] = _mm256_shuffle_epi8(lut256(kMxfp4Lut), nibbles_q4(p + 1));
  }
};

// ---- NVFP4: 64 elements, 4 sub-blocks of 16 -> 2 chunks ----------------------------------------
struct UNVFP4 {
  static constexpr int kChunks = 2;
  static constexpr int64_t kElems = 64;
  static constexpr int64_t kBytes = 36;
  static constexpr bool kMins = false;
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    const float* tab = ue4m3_half_table();
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m256i lut = lut256(kMxfp4Lut);
    for (int c = 0; c < 2; ++c) {  // sub-block s: low nibbles of qs[8s..8s+7], then high
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 + 16 * c));
      const __m128i lo = _mm_and_si128(x, m4), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m4);
      const __m256i codes = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
      ws[c] = _mm256_shuffle_epi8(lut, codes);
      vdw[c] = lanes_2x4(tab[p[2 * c]], tab[p[2 * c + 1]]);
    }
  }
};

// ---- K-quants: 256 elements = 8 chunks ----------------------------------------------------------
struct KUnit {
  static constexpr int kChunks = 8;
  static constexpr int64_t kElems = 256;
};

// 16 signed group scales times d.
static inline void scales16(__m128i sc8, float d, float* dsc) {
  const __m256 vd = _mm256_set1_ps(d);
  _mm256_storeu_ps(dsc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)), vd));
  _mm256_storeu_ps(dsc + 8,
                   _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc8, 8))), vd));
}

// Q2_K / Q3_K: element 128h + 32j + l (l < 32) is bits 2j..2j+1 of qs[32h + l].
static inline __m256i q2_bits(const uint8_t* qs, int c) {
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (c / 4)));
  return _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * (c % 4))), _mm256_set1_epi8(3));
}

struct UQ2_K : KUnit {
  static constexpr int64_t kBytes = 84;
  static constexpr bool kMins = true;
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float* wc) {
    const __m128i sb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    alignas(32) float dsc[16];
    scales16(_mm_and_si128(sb, _mm_set1_epi8(0x0F)), ld_f16(p + 80), dsc);
    scales16(_mm_and_si128(_mm_srli_epi16(sb, 4), _mm_set1_epi8(0x0F)), -ld_f16(p + 82), wc);
    for (int c = 0; c < 8; ++c) {
      ws[c] = q2_bits(p + 16, c);
      vdw[c] = lanes_2x4(dsc[2 * c], dsc[2 * c + 1]);
    }
  }
};

struct UQ3_K : KUnit {
  static constexpr int64_t kBytes = 110;
  static constexpr bool kMins = false;
  static void unpack(const uint8_t* p, __m256i* ws, __m256* vdw, float*) {
    // 16 six-bit scales (blocks.h unpack_q3_k_scales), each word built from the original a2.
    const uint32_t a0 = ld_u32(p + 96), a1 = ld_u32(p + 100), a2 = ld_u32(p + 104);
    const uint32_t k4 = 0x0F0F0F0Fu, k2 = 0x03030303u;
    const __m128i sc = _mm_sub_epi8(
        _mm_setr_epi32(static_cast<int>((a0 & k4) | ((a2 & k2) << 4)),
                       static_cast<int>((a1 & k4) | (((a2 >> 2) & k2) << 4)),
                       static_cast<int>(((a0 >> 4) & k4) | (((a2 >> 4) & k2) << 4)),
                       static_cast<int>(((a1 >> 4) & k4) | (((a2 >> 6) & k2) << 4))),
        _mm_set1_epi8(32));
    alignas(32) float dsc[16];
    scales16(sc, ld_f16(p + 108), dsc);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i one = _mm256_set1_epi8(1), k4v = _mm256_set1_epi8(4);
    for (int c = 0; c < 8; ++c) {  // hmask bit 4h + j for half h = c/4, shift j = c%4
      const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(c)), one);
      ws[c] = _mm256_sub_epi8(_mm256_or_si256(q2_bits(p + 32, c), _mm256_slli_epi16(hb, 2)), k4v);
      vdw[c] = lanes_2x4(dsc[2 * c], dsc[2 * c + 1]);
    }
  }
};
