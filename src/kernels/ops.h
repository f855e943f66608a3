// Non-matmul CPU kernels: RMSNorm, RoPE, softmax, activations, element-wise add/mul and the
// embedding row fetch. Attention lives in kernels/attention.h.
//
// Every function X has a scalar twin X_ref (the oracle of DESIGN §1.3); X dispatches on
// kernels::active_isa() to the ref, AVX2 or AVX-512 implementation. All of these are O(n) per
// row and run on the calling thread: at decode shapes a pool barrier would cost more than the
// op. Strides are in elements (floats) unless named *_bytes. In-place use (y == x, out == a)
// is allowed wherever an output may alias an input of the same shape.
//
// Tolerances of the SIMD paths against the refs (what tests/ops checks):
//   rms_norm         |d| <= 2e-6 * |ref| + 1e-7          (float accumulation vs double)
//   rope_apply/rope  bitwise equal (same cos/sin table, same mul/add order, no FMA)
//   softmax          |d| <= 3e-6 * ref + 1e-9
//   silu/swiglu      |d| <= 2e-6 * |ref| + 1e-7
//   gelu/geglu       |d| <= 4e-6 * |ref| + 1e-7
//   add/mul          bitwise equal
//   l2_norm          |d| <= 2e-6 * |ref| + 1e-7
//   rms_norm_gated   |d| <= 4e-6 * |ref| + 1e-7
//   sigmoid          |d| <= 2e-6 * |ref| + 1e-7
//   softplus         |d| <= 2e-6 * |ref| + 1e-7  (scalar f32 on every ISA: a few values per token)
//   relu_sq          bitwise equal
//   get_rows         bitwise equal to dequantize_row
// The vectorized exp (used by softmax, silu, gelu and attention) has relative error < 4e-7
// over [-87, 88]; it returns 0 below -87.33 and saturates at ~2.5e38 above 88.37.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace fulgur::kernels {

// ---- RMSNorm ---------------------------------------------------------------------------
// x: [n_rows][x_stride] f32, the first `dim` of each row are used.
// weight: [dim] f32 or nullptr (= all ones).
// y: [n_rows][y_stride] f32; y == x allowed (with y_stride == x_stride).
// y = x / sqrt(mean(x²) + eps) * weight.
void rms_norm(const float* x, const float* weight, float eps, float* y, int64_t n_rows,
              int64_t dim, int64_t x_stride, int64_t y_stride);
void rms_norm_ref(const float* x, const float* weight, float eps, float* y, int64_t n_rows,
                  int64_t dim, int64_t x_stride, int64_t y_stride);

// ---- norms of the recurrent layers (archs-gguf.md §1.8, §4.3, §4.4) --------------------------
// Per-head L2 norm in place (ggml l2_norm; Gated DeltaNet's q and k): x: [n_rows][row_stride]
// f32 holding [n_heads][head_dim] at the start of each row; every head h <- h / max(|h|_2, eps).
void l2_norm(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
             float eps);
void l2_norm_ref(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
                 float eps);

// Where the silu(z) gate goes relative to the RMSNorm.
enum class GateOrder {
  kNormThenGate,  // Gated DeltaNet (Qwen3NextRMSNormGated): y = rms_norm(x)·w ⊙ silu(z)
  kGateThenNorm,  // Mamba2 (MambaRMSNormGated):             y = rms_norm(x ⊙ silu(z))·w
};
// x, z: [n_rows][x_stride], [n_rows][z_stride] f32, the first `dim` of each row used.
// y: [n_rows][y_stride] f32; y == x allowed (with y_stride == x_stride).
// weight: [dim] f32 or nullptr (= all ones). Each row is split into n_groups contiguous groups
// of dim / n_groups, each normalised on its own: y_i = u_i / sqrt(mean_group(u²) + eps) · w_i.
// Gated DeltaNet: rows = (token, v-head), dim = Dv, n_groups = 1, the shared weight [Dv].
// Mamba2: rows = tokens, dim = Di, n_groups = G, weight [Di] (GGUF ssm_norm {Di/G, G}).
void rms_norm_gated(const float* x, const float* z, const float* weight, float eps,
                    GateOrder order, float* y, int64_t n_rows, int64_t dim, int64_t n_groups,
                    int64_t x_stride, int64_t z_stride, int64_t y_stride);
void rms_norm_gated_ref(const float* x, const float* z, const float* weight, float eps,
                        GateOrder order, float* y, int64_t n_rows, int64_t dim,
                        int64_t n_groups, int64_t x_stride, int64_t z_stride, int64_t y_stride);

// ---- RoPE ------------------------------------------------------------------------------
// Values match ggml's rope modes (GGML_ROPE_TYPE_NEOX = 2).
enum class RopeMode : int {
  kNormal = 0,  // GPT-J / LLaMA-GGUF: rotates adjacent pairs (x[2i], x[2i+1])
  kNeox = 2,    // GPT-NeoX / HF rotate_half (Qwen, Gemma): pairs (x[i], x[i + n_rot/2])
};

// Frequencies, archs-gguf.md §4.0. θ_i = pos · freq_base^(−2i/n_rot) / freq_factors[i] for
// pair i < n_rot/2, then YaRN: θ = freq_scale·θ·(1 − mix) + θ·mix with
// mix = ext_factor·(1 − ramp(i)), and cos/sin are multiplied by
// attn_factor · (ext_factor != 0 ? 1 + 0.1·ln(1/freq_scale) : 1), as ggml does.
// Plain RoPE: leave everything but n_rot, mode and freq_base at the defaults.
struct RopeParams {
  int64_t n_rot = 0;  // rotated dims per head; even, <= head_dim
  RopeMode mode = RopeMode::kNeox;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;              // 1 / (context scaling factor)
  const float* freq_factors = nullptr;  // [n_rot/2] f32 divisors of θ_i, or nullptr
  float ext_factor = 0.0f;              // YaRN extrapolation mix; 0 = no YaRN
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int64_t n_ctx_orig = 0;  // YaRN original context; only read when ext_factor != 0
};

// Largest n_rot that rope() accepts (its cos/sin table lives on the stack).
inline constexpr int64_t kRopeMaxRot = 1024;

// The rotation table of one row, cs [2][n_rot] f32 (scalar code, shared by every ISA):
//   cs[0][j] = cos(θ_pair(j)) · m,   cs[1][j] = ±sin(θ_pair(j)) · m
// where pair(j) = j mod n_rot/2 (neox) or j/2 (normal), the sign is − for the first member of
// a pair (j < n_rot/2 resp. j even) and + for the second, and m is the YaRN magnitude.
// The rotation is then x'[j] = x[j]·cs[0][j] + x[partner(j)]·cs[1][j].
// positions: [n_rows] i32; cs: [n_rows][2][n_rot] f32. Throws on bad params.
void rope_cache(const RopeParams& params, const int32_t* positions, int64_t n_rows, float* cs);

// Rotates the first n_rot dims of every head of every row using a table from rope_cache.
// x: [n_rows][row_stride] f32 holding [n_heads][head_dim] at the start of each row.
// cs: [n_rows][2][n_rot] f32. Dims >= n_rot of each head are left unchanged.
void rope_apply(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
                int64_t n_rot, RopeMode mode, const float* cs);
void rope_apply_ref(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim,
                    int64_t row_stride, int64_t n_rot, RopeMode mode, const float* cs);

// rope_cache + rope_apply one row at a time (table on the stack, n_rot <= kRopeMaxRot).
// x: [n_rows][row_stride] f32 as in rope_apply; positions: [n_rows] i32.
// When q and k share positions, calling rope_cache once and rope_apply twice saves the
// sin/cos work.
void rope(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
          const int32_t* positions, const RopeParams& params);
void rope_ref(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t row_stride,
              const int32_t* positions, const RopeParams& params);

// ---- softmax ---------------------------------------------------------------------------
// x: [n_rows][row_stride] f32, the first n of each row; in place:
// x = exp(scale·x − max) / Σ exp(scale·x − max). −inf entries get probability 0; a row that
// is all −inf becomes all 0 (not NaN).
void softmax(float* x, int64_t n_rows, int64_t n, int64_t row_stride, float scale = 1.0f);
void softmax_ref(float* x, int64_t n_rows, int64_t n, int64_t row_stride, float scale = 1.0f);

// ---- activations (archs-gguf.md §1.8); all vectors [n] f32, out may alias an input ------
// silu(x) = x / (1 + e^−x)
void silu(const float* x, float* out, int64_t n);
void silu_ref(const float* x, float* out, int64_t n);
// gelu(x) = 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))  (the tanh approximation)
void gelu(const float* x, float* out, int64_t n);
void gelu_ref(const float* x, float* out, int64_t n);
// out = silu(gate) · up
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void swiglu_ref(const float* gate, const float* up, float* out, int64_t n);
// out = gelu(gate) · up
void geglu(const float* gate, const float* up, float* out, int64_t n);
void geglu_ref(const float* gate, const float* up, float* out, int64_t n);
// sigmoid(x) = 1 / (1 + e^−x)  (β of Gated DeltaNet, Nemotron-H's router, output gates)
void sigmoid(const float* x, float* out, int64_t n);
void sigmoid_ref(const float* x, float* out, int64_t n);
// softplus(x) = x > 20 ? x : log(1 + e^x)  (ggml's threshold; Gated DeltaNet's decay)
void softplus(const float* x, float* out, int64_t n);
void softplus_ref(const float* x, float* out, int64_t n);
// relu_sq(x) = max(x, 0)²  (Nemotron-H's MLP and experts)
void relu_sq(const float* x, float* out, int64_t n);
void relu_sq_ref(const float* x, float* out, int64_t n);
// out = a + b (residual add), out = a · b
void add(const float* a, const float* b, float* out, int64_t n);
void add_ref(const float* a, const float* b, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);
void mul_ref(const float* a, const float* b, float* out, int64_t n);

// ---- get_rows (embedding lookup) ---------------------------------------------------------
// table: n_table_rows rows of `cols` elements of `type`, row_stride_bytes apart
//        (normally row_bytes(type, cols)); type must be computable and cols a multiple of its
//        block size.
// ids: [n] i32, each in [0, n_table_rows) — checked, a bad id throws naming it.
// out: [n][ldo] f32, the first cols of each row.
// Optimized for F32, F16, BF16, Q8_0, Q4_K and Q6_K; every other type uses dequantize_row.
void get_rows(DType type, const void* table, size_t row_stride_bytes, int64_t n_table_rows,
              int64_t cols, const int32_t* ids, int64_t n, float* out, int64_t ldo);
void get_rows_ref(DType type, const void* table, size_t row_stride_bytes, int64_t n_table_rows,
                  int64_t cols, const int32_t* ids, int64_t n, float* out, int64_t ldo);

// ---- f16 rows (the KV cache write) -----------------------------------------------------------
// y[i] = x[i] rounded to IEEE binary16, nearest-even, overflow to inf (core/fp16.h semantics;
// F16C on the SIMD paths, bitwise equal except for NaN payloads). x: [n] f32, y: [n] f16 bits.
void to_f16(const float* x, uint16_t* y, int64_t n);
void to_f16_ref(const float* x, uint16_t* y, int64_t n);

// ---- test hook -----------------------------------------------------------------------------
// y[i] = exp(x[i]) with the active ISA's vectorized exp (std::exp on ref); for accuracy tests.
void vec_exp(const float* x, float* y, int64_t n);

}  // namespace fulgur::kernels
