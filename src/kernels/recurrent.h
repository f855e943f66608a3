// Kernels of the recurrent layer kinds (archs-gguf.md §4.3 Gated DeltaNet, §4.4 Mamba2): the
// causal depthwise conv1d with its state, the Mamba2 selective scan, and the gated delta rule
// in a per-token form (decode, verification rows) and a chunked form (prefill).
//
// Every call runs n tokens of ONE sequence over raw f32 arrays; strides are in floats, and
// per-token inputs are rows [n][stride] whose first elements hold the named shape (so q, k and
// v may be views into one conv output row). Outputs must not overlap inputs or states.
// X validates its arguments (fulgur::Error naming the field) and dispatches on
// kernels::active_isa(); X_ref is the scalar oracle (double inside, states rounded to f32 after
// every token, or every chunk for the chunked form), called with valid arguments only.
//
// Determinism (what makes speculation on a recurrent target lossless): the per-token forms
// (conv1d_causal, ssm_scan, gated_delta) compute each token exactly as a call with that token
// alone would, so one call over n tokens gives bitwise the outputs and the state of n calls of
// one token each, on the same ISA, whatever the pool. When snap != nullptr, snap[t] (if not
// null) receives the whole state after token t: bitwise the state a call stopped after token t
// leaves. That is how a verification batch keeps the state after each row. A snapshot costs
// one more write of the state per token, no extra read: the step streams it from registers,
// with non-temporal stores when the plane is 64-byte aligned (as PageBuffer memory is) and its
// rows are whole vectors, so the lines are not read before being overwritten.
//
// Accuracy of the SIMD paths against the refs (what tests/ops checks; states and outputs over
// runs of up to 200 tokens of unit-scale data):
//   conv1d_causal        |d| <= 2e-6·Σ|w·u| + 1e-7, state and snapshots bitwise (copies)
//   ssm_scan             |d| <= 1e-5·(|ref| + rms(ref))           (measured <= 6e-7)
//   gated_delta          |d| <= 2e-5·(|ref| + rms(ref))           (measured <= 2e-6)
//   gated_delta_chunked  |d| <= 5e-5·(|ref| + rms(ref)) against either gated_delta_ref or
//                        gated_delta_chunked_ref (measured <= 8e-6; the two refs differ by
//                        <= 1.5e-6)
#pragma once

#include <cstdint>

namespace fulgur {
class ThreadPool;
}

namespace fulgur::kernels {

// ---- causal depthwise conv1d ------------------------------------------------------------
// y_t[c] = act(Σ_{j<K} w[c][j]·u_{t−(K−1)+j}[c] + bias[c]), act = silu or identity, where u_t
// is token t's input row and u at negative times comes from the state (ggml ssm_conv, then the
// bias add and silu that Mamba2 and Gated DeltaNet apply after it).
struct Conv1dArgs {
  int64_t n = 0;             // tokens
  int64_t channels = 0;      // C
  int64_t kernel = 0;        // K >= 1 (4 in every released model)
  const float* x = nullptr;  // [n][x_stride] f32: u_t in the first C of each row
  int64_t x_stride = 0;
  const float* w = nullptr;  // [C][K] f32 (ggml {K, C}); w[c·K + K−1] multiplies u_t
  // w is tap-major [K][C] instead (conv1d_tap_major of the GGUF tensor, done once at load).
  // The SIMD paths want that layout; from ggml's they transpose it on every call, which costs
  // as much as the conv itself at decode.
  bool w_tap_major = false;
  const float* bias = nullptr;  // [C] f32 or nullptr
  bool silu = false;
  // [K−1][C] f32: the K−1 inputs before x's first row, oldest first (zeros at the start of a
  // sequence). Updated in place to the last K−1 inputs.
  float* state = nullptr;
  float* y = nullptr;  // [n][y_stride] f32
  int64_t y_stride = 0;
  float* const* snap = nullptr;  // [n] pointers to [K−1][C] f32 (entries may be null), or null
};
void conv1d_causal(const Conv1dArgs& args);
void conv1d_causal_ref(const Conv1dArgs& args);
// w: [C][K] f32 (ggml {K, C}) -> wt: [K][C] f32, for Conv1dArgs::w_tap_major.
void conv1d_tap_major(const float* w, int64_t channels, int64_t kernel, float* wt);

// ---- Mamba2 selective scan -----------------------------------------------------------------
// Per token t and head h (group g = h / (Hs/G), as ggml ssm_scan and HF's repeat_interleave):
//   Δ = softplus(dt[h] + dt_bias[h])            softplus(v) = v > 20 ? v : log(1 + e^v)
//   dA = exp(Δ·A[h])
//   state[h][p][i] = state[h][p][i]·dA + B[g][i]·(x[h][p]·Δ)
//   y[h][p] = Σ_i state[h][p][i]·C[g][i] + D[h]·x[h][p]
struct SsmScanArgs {
  int64_t n = 0;             // tokens
  int64_t n_heads = 0;       // Hs
  int64_t head_dim = 0;      // P
  int64_t n_groups = 0;      // G, divides Hs
  int64_t d_state = 0;       // N
  const float* x = nullptr;  // [n][x_stride] f32: [Hs][P] at the start of each row
  int64_t x_stride = 0;
  const float* dt = nullptr;  // [n][dt_stride] f32: [Hs], before the bias and softplus
  int64_t dt_stride = 0;
  const float* dt_bias = nullptr;  // [Hs] f32 or nullptr (= 0)
  const float* a = nullptr;        // [Hs] f32, already −exp(A_log) (GGUF ssm_a)
  const float* b = nullptr;        // [n][b_stride] f32: [G][N]
  int64_t b_stride = 0;
  const float* c = nullptr;  // [n][c_stride] f32: [G][N]
  int64_t c_stride = 0;
  const float* d = nullptr;  // [Hs] f32 or nullptr (no skip term)
  float* state = nullptr;    // [Hs][P][N] f32, updated in place
  float* y = nullptr;        // [n][y_stride] f32: [Hs][P]
  int64_t y_stride = 0;
  float* const* snap = nullptr;  // [n] pointers to [Hs][P][N] f32 (entries may be null), or null
};
// Heads are split over the pool (nullptr: the calling thread).
void ssm_scan(const SsmScanArgs& args, ThreadPool* pool = nullptr);
void ssm_scan_ref(const SsmScanArgs& args);

// ---- gated delta rule (Gated DeltaNet) --------------------------------------------------------
// Which q/k head a v-head reads: kTiled hk = hv % Hk (Qwen3.5 GGUFs, ggml's fused op),
// kGrouped hk = hv / (Hv/Hk) (Qwen3-Next GGUFs, HF's repeat_interleave).
enum class GdnHeadMap { kTiled, kGrouped };

// Per token t and v-head hv, with S = S_hv (Dk × Dv), q' = q_scale·q, in this order
// (archs-gguf.md §4.3 step 8):
//   S ← exp(g)·S;  m_j = Σ_i S[i][j]·k[i];  δ_j = β·(v_j − m_j);  S[i][j] += k[i]·δ_j;
//   out_j = Σ_i S[i][j]·q'[i]
// The state is stored transposed like ggml's: state[hv][j][i] = S_hv[i][j].
struct GatedDeltaArgs {
  int64_t n = 0;          // tokens
  int64_t n_k_heads = 0;  // Hk
  int64_t n_v_heads = 0;  // Hv, a multiple of Hk
  int64_t k_dim = 0;      // Dk (<= kGdnMaxKeyDim)
  int64_t v_dim = 0;      // Dv
  GdnHeadMap head_map = GdnHeadMap::kTiled;
  float q_scale = 0.0f;      // applied to q; 0 means 1/sqrt(Dk)
  const float* q = nullptr;  // [n][q_stride] f32: [Hk][Dk], l2-normalised, unscaled
  int64_t q_stride = 0;
  const float* k = nullptr;  // [n][k_stride] f32: [Hk][Dk], l2-normalised
  int64_t k_stride = 0;
  const float* v = nullptr;  // [n][v_stride] f32: [Hv][Dv]
  int64_t v_stride = 0;
  const float* g = nullptr;  // [n][g_stride] f32: [Hv] log decay, ssm_a·softplus(α + dt_bias) <= 0
  int64_t g_stride = 0;
  const float* beta = nullptr;  // [n][beta_stride] f32: [Hv], already sigmoid
  int64_t beta_stride = 0;
  float* state = nullptr;  // [Hv][Dv][Dk] f32, updated in place
  float* out = nullptr;    // [n][out_stride] f32: [Hv][Dv]
  int64_t out_stride = 0;
  float* const* snap = nullptr;  // gated_delta only: [n] pointers to [Hv][Dv][Dk] f32, or null
  int64_t pos0 = 0;              // gated_delta_chunked only: absolute position of token 0 (>= 0)
};

inline constexpr int64_t kGdnMaxKeyDim = 512;
// Chunk length of the prefill form; chunks cover absolute positions [64m, 64m + 64).
inline constexpr int64_t kGdnChunk = 64;

// Per-token form. V-heads are split over the pool.
void gated_delta(const GatedDeltaArgs& args, ThreadPool* pool = nullptr);
void gated_delta_ref(const GatedDeltaArgs& args);

// Chunked (WY) form for prefill: the same outputs and final state up to rounding, no
// snapshots (args.snap must be null). Within a chunk of tokens 1..L (G_t = Σ_{s<=t} g_s):
//   A[t][s] = β_t (k_t·k_s) e^{G_t−G_s} (s < t), T = (I + A)⁻¹ by forward substitution,
//   U = T·(β v), W = T·(β e^G k), Δ = U − W·S,
//   out_t = e^{G_t} q'_t·S + Σ_{s<=t} (q'_t·k_s) e^{G_t−G_s} Δ_s,
//   S ← e^{G_L} S + Σ_t e^{G_L−G_t} k_t Δ_tᵀ.
// Each chunk depends only on its own tokens and the incoming state, so prefilling a prompt in
// pieces whose boundaries are multiples of 64 (in absolute position) gives bitwise the state
// and outputs of one piece.
// On a CPU this form does not pay the way it does on a GPU: it costs as many flops as the
// recurrence (4.5M multiply-adds per chunk and head at Dk = Dv = 128, against 4.2M), and
// bench_ssm measured it ~1.7x slower than gated_delta over 512 tokens at Qwen3.5's sizes
// (AVX-512, one thread). Prefill with gated_delta unless bench_ssm says otherwise on the
// target machine; its states are then also bitwise those of decode.
void gated_delta_chunked(const GatedDeltaArgs& args, ThreadPool* pool = nullptr);
void gated_delta_chunked_ref(const GatedDeltaArgs& args);

}  // namespace fulgur::kernels
