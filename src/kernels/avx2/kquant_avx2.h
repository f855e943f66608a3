// Internal to matmul_avx2.cpp (included once, inside its anonymous namespace, after
// matmul_units_avx2.h): Q4_K, Q5_K and Q6_K against the Q8 activations, the types of a Q4_K_M
// file. Their values are small unsigned integers with an integer scale per sub-block:
//   Q4_K / Q5_K: x = d * sc_j * u - dmin * m_j, u in 0..15 / 0..31, j = 32-element sub-block;
//   Q6_K:        x = d * sc_g * (u - 32),      u in 0..63,          g = 16-element group.
// So, per 32-element chunk and activation row, maddubs(u, a) needs no sign trick (a pair sum is
// at most 2 * 63 * 127), madd with the scales as int16 widens to int32 and applies sc in one
// go, and one FMA applies the activation block's scale; d multiplies once per super-block. The
// offsets (the mins, Q6_K's -32) are a dot of 16 group constants with the activation's group sums
// (ActQ8::s), also once per super-block. Against the generic unit path (two signs, a float
// scale multiplied per chunk and row) that is two operations fewer per chunk and row, and one
// per chunk: 1.3-1.5x on a Zen 1 host.

// What one super-block contributes besides its values.
struct KBlock {
  __m256i scales[2];  // int16 scales, as scale_for() shuffles them (Q4_K, Q5_K: [0] only)
  __m256 d;           // the super-block scale
  __m256 offset[2];   // per 16-element group: the constant added to each x (times its a-sum)
};

// Chunk c's scales as 16 int16 lanes: lanes 0-7 multiply elements 0-15, lanes 8-15 elements
// 16-31 (madd pairs adjacent lanes). `src` holds 8 int16 scales in both 128-bit halves; byte
// shuffles stay within a half, so each half picks its own index.
static inline __m256i scale_for(__m256i src, int lo, int hi) {
  const int a = (2 * lo) | (2 * lo + 1) << 8, b = (2 * hi) | (2 * hi + 1) << 8;
  return _mm256_shuffle_epi8(src,
                             _mm256_setr_epi16(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b));
}

struct KQ4Base {  // Q4_K and Q5_K share their header: d, dmin, 12 bytes of scales and mins
  static constexpr int64_t kElems = 256;
  static void block(const uint8_t* p, KBlock& k) {
    uint64_t sc, m;
    scales_mins_k4(p + 4, &sc, &m);
    const __m128i sc16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc)));
    k.scales[0] = _mm256_broadcastsi128_si256(sc16);
    k.d = _mm256_set1_ps(ld_f16(p));
    const __m256 mins = _mm256_mul_ps(
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(m)))),
        _mm256_set1_ps(-ld_f16(p + 2)));
    k.offset[0] = _mm256_permutevar8x32_ps(mins, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    k.offset[1] = _mm256_permutevar8x32_ps(mins, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
  }
  // Chunk (= sub-block) c's scale on every lane.
  static __m256i scale(const KBlock& k, int c) { return scale_for(k.scales[0], c, c); }
};

struct KQ4 : KQ4Base {
  static constexpr int64_t kBytes = 144;
  // Chunks c, c + 1 (c even): the low, then the high nibbles of 32 bytes.
  static void values(const uint8_t* p, int c, __m256i* v) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 16 * c));
    v[0] = _mm256_and_si256(q, m4);
    v[1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
  }
};

struct KQ5 : KQ4Base {
  static constexpr int64_t kBytes = 176;
  // As Q4_K, with bit c of qh[l] on top of chunk c's element l.
  static void values(const uint8_t* p, int c, __m256i* v) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 48 + 16 * c));
    const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(c)), one);
    const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(c + 1)), one);
    v[0] = _mm256_or_si256(_mm256_and_si256(q, m4), _mm256_slli_epi16(h0, 4));
    v[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), _mm256_slli_epi16(h1, 4));
  }
};

struct KQ6 {
  static constexpr int64_t kElems = 256;
  static constexpr int64_t kBytes = 210;
  static void block(const uint8_t* p, KBlock& k) {
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192));
    k.scales[0] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(s));
    k.scales[1] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_srli_si128(s, 8)));
    const float d = ld_f16(p + 208);
    k.d = _mm256_set1_ps(d);
    const __m256 m32d = _mm256_set1_ps(-32.0f * d);
    k.offset[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s)), m32d);
    k.offset[1] =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(s, 8))), m32d);
  }
  // Groups 2c and 2c + 1.
  static __m256i scale(const KBlock& k, int c) {
    return scale_for(k.scales[c / 4], (2 * c) % 8, (2 * c + 1) % 8);
  }
  // Chunks c, c + 1 (c even). Elements 128h + 32k + l (k < 4, l < 32): the low (k = 0, 1) or
  // high (k = 2, 3) nibble of ql[64h + 32(k % 2) + l], topped by bits 2k, 2k + 1 of qh[32h + l].
  static void values(const uint8_t* p, int c, __m256i* v) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    const int h = c / 4;
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h));
    for (int i = 0; i < 2; ++i) {
      const int k = c % 4 + i;
      const __m256i ql =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h + 32 * (k % 2)));
      const __m256i lo =
          k < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
      const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), m2);
      v[i] = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 4));
    }
  }
};

template <class K, int R>
void kq_tile(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0) {
  const WeightView& w = *t.w;
  const int64_t nblocks = w.cols / K::kElems;
  const ActRows<R> act(t.act, r0);
  for (int64_t o = o0; o < o1; ++o) {
    const auto* row = static_cast<const uint8_t*>(w.data) + o * static_cast<int64_t>(w.row_stride);
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nblocks; ++b) {
      const uint8_t* p = row + b * K::kBytes;
      KBlock k;
      K::block(p, k);
      // Even and odd chunks go to two partial sums: one FMA chain of 8 per super-block would wait
      // on the FMA latency with few rows. Every row count sums the same way (batch invariance).
      __m256 part[2][R];
      for (int r = 0; r < R; ++r) part[0][r] = part[1][r] = _mm256_setzero_ps();
#pragma GCC unroll 4
      for (int c = 0; c < 8; c += 2) {
        __m256i v[2];
        K::values(p, c, v);
        for (int i = 0; i < 2; ++i) {
          const __m256i sc = K::scale(k, c + i);
          const int64_t e = b * K::kElems + 32 * (c + i);
          for (int r = 0; r < R; ++r) {
            const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.q[r] + e));
            const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(v[i], a), sc);
            part[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_loadu_ps(act.d[r] + e / 4),
                                         part[i][r]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256 sum = _mm256_add_ps(part[0][r], part[1][r]);
        acc[r] = _mm256_fmadd_ps(sum, k.d, acc[r]);
        acc[r] = _mm256_fmadd_ps(k.offset[0], _mm256_loadu_ps(act.s[r] + 16 * b), acc[r]);
        acc[r] = _mm256_fmadd_ps(k.offset[1], _mm256_loadu_ps(act.s[r] + 16 * b + 8), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) t.y[(r0 + r) * t.ldy + o] = w.scale * hsum(acc[r]);
  }
}
