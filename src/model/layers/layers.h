// The layer kinds (model/desc.h), each implemented once as functions over weights, memory and
// scratch, and shared by every model that has the kind: targets, draft models and the DFlash
// backbone. Context (model/context.h) runs them over one chunk of batch rows at a time; a
// layer's mixer or feed-forward reads its normed input `h` [n][E] and writes its output `out`
// [n][E] (the caller adds it to the residual stream).
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/moe.h"
#include "model/desc.h"
#include "model/kv_cache.h"
#include "model/recurrent_state.h"
#include "model/weights.h"

namespace fulgur {

inline constexpr int kMaxRopeTables = 2;

// The rows of one sequence within a chunk, and the KV cells visible to them in canonical order.
// Attention runs once per sequence so that a row's cell list never interleaves cells of other
// sequences: the kernel's online softmax groups cells into fixed tiles, and only a list that is
// the same prefix-ordered sequence history, whatever else the batch holds, gives bitwise
// identical sums.
// A model keeps K and V in up to two caches: one for the layers that see every earlier
// position, one for its sliding-window layers (bounded by the window).
inline constexpr int kKvCaches = 2;
inline int kv_cache_of(const AttentionDesc& d) { return d.window > 0 ? 1 : 0; }

struct VisibleCells {
  std::vector<int32_t> cells, pos;  // canonical order
  std::vector<uint64_t> seq;
};

struct SeqGroup {
  int32_t seq = 0;
  std::vector<int32_t> rows;               // chunk rows of this sequence, in batch order
  VisibleCells visible[kKvCaches];         // per KV cache
  VisibleCells ext_visible[kKvCaches];     // per KV cache of the context read_kv_from names
  std::vector<int32_t> row_pos, row_seq;   // [rows] positions and sequence ids
};

// Scratch for the layer kinds, sized once per context for its largest chunk (no allocation in
// the token loop). Row counts below are the chunk's rows, B = the most rows a chunk may hold.
struct LayerScratch {
  LayerScratch(const ModelDesc& desc, int64_t max_rows);

  std::vector<float> q, k, v;       // [B][H*Dh], [B][Hkv*Dh] x2
  std::vector<float> attn;          // [B][H*Dh]
  std::vector<float> q_gather, out_gather;  // [B][H*Dh] rows of one sequence
  // Gated attention (output_gate): the q projection with each head's gate rows, and the gates.
  std::vector<float> q_and_gate;    // [B][H][2][Dh]
  std::vector<float> attn_gate;     // [B][H*Dh]
  // Gated DeltaNet (C conv channels, Vd value width, Hv v-heads). Batch rows unless noted; the
  // group-local buffers hold the rows of one sequence at a time.
  std::vector<float> gdn_qkv;       // [B][C] projection = conv input
  std::vector<float> gdn_z;         // [B][Vd]
  std::vector<float> gdn_b, gdn_a;  // [B][2*Hv], [B][Hv]: β and α logits (ssm_ba: both in gdn_b)
  std::vector<float> gdn_o;         // [B][Vd] delta-rule output, then gated-normed in place
  std::vector<float> gdn_in;        // [B][C] group-local: gathered conv input (interleaved rows)
  std::vector<float> gdn_conv;      // [B][C] group-local: conv output q | k | v
  std::vector<float> gdn_beta, gdn_g;  // [B][Hv] group-local: β = σ(b), g = a·softplus(α + dt)
  std::vector<float> gdn_og;        // [B][Vd] group-local: delta-rule output of interleaved rows
  std::vector<float> gate, up;      // [B][F] (dense FFN)
  // Mamba2: the in-projection of every row, one sequence's conv output, the scan output of
  // every row; the in-projection and scan rows of one sequence when the chunk interleaves
  // sequences.
  std::vector<float> ssm_in;        // [B][2Di + 2GN + Hs]
  std::vector<float> ssm_xbc;       // [B][Di + 2GN]
  std::vector<float> ssm_y;         // [B][Di]
  std::vector<float> ssm_in_seq;    // [B][2Di + 2GN + Hs]
  std::vector<float> ssm_y_seq;     // [B][Di]
  // MoE: router logits, the chosen experts and weights of every row, the (row, choice) pairs
  // grouped by expert, the grouped matmul's jobs and expert views, and the experts'
  // intermediate and output rows per pair, in expert order.
  std::vector<float> router;        // [B][n_expert]
  std::vector<int32_t> chosen;      // [B][k] expert ids
  std::vector<float> chosen_w;      // [B][k] routing weights
  kernels::ExpertRows expert_rows;
  std::vector<kernels::MatmulJob> expert_jobs;    // [2 * n_expert]
  std::vector<kernels::WeightView> expert_views;  // [2 * n_expert]
  std::vector<float> exp_gate, exp_up;  // [B*k][F_exp]
  std::vector<float> exp_out;       // [B*k][X] X = E, or the latent width L
  std::vector<float> moe_latent;    // [B][L] latent_down · h (latent MoE)
  std::vector<float> moe_routed;    // [B][L] the routed sum before latent_up (latent MoE)
  std::vector<float> moe_shared;    // [B][E] the shared expert's output
  std::vector<float> moe_router_in, moe_expert_in;  // [B][E] MoeDesc::residual_branches
  // Per-layer embeddings (ModelDesc::ple_width P, L layers): every layer's input of the chunk's
  // rows, the token table's rows while they are built, one layer's gate.
  std::vector<float> ple_in, ple_tok;  // [B][L*P]
  std::vector<float> ple_gate;         // [B][P]
  // Distinct experts run, summed over the MoE layers of the last decode, and those layers.
  int64_t moe_experts_run = 0, moe_layers_run = 0;
  // DFlash2 block convolution: per-row dynamic coefficients and the convolved rows.
  std::vector<float> conv_delta;    // [B][2*K*G]
  std::vector<float> conv_out;      // [B][E]
};

// Floats of conv and recurrent state per sequence of every layer (0 for layers without).
std::vector<RecurrentState::LayerSize> recurrent_sizes(const ModelDesc& desc);

// One chunk of batch rows on its way through the layers.
struct ForwardPass {
  const ModelDesc* desc = nullptr;
  int64_t n = 0;                     // rows
  const int32_t* pos = nullptr;      // [n]
  const int32_t* seq = nullptr;      // [n]
  const SeqGroup* groups = nullptr;  // [n_groups]
  int64_t n_groups = 0;
  // Per KV cache (kv_cache_of): the cache (null when no layer keeps K and V there) and the
  // rows' cells in it [n].
  KvCache* kv[kKvCaches] = {};
  const int32_t* cells[kKvCaches] = {};
  // The caches of another context that AttentionDesc::kv_external layers read (null: none).
  const KvCache* ext_kv[kKvCaches] = {};
  const float* rope_cs[kMaxRopeTables] = {};  // per ModelDesc rope table: [n][2][n_rot]
  RecurrentState* rs = nullptr;      // for recurrent layers: rs->rows(layer, seq) per group
  LayerScratch* s = nullptr;
  ThreadPool* pool = nullptr;

  // fn(r0, r1) over row ranges covering [0, rows): split across the pool when there are rows
  // enough to share (a pool run costs a barrier).
  template <class Fn>
  void for_rows(int64_t rows, Fn&& fn) const {
    constexpr int64_t kMinRowsPerThread = 4;
    if (rows >= kMinRowsPerThread * pool->size() && pool->size() > 1)
      pool->parallel_for(rows, [&](int64_t r0, int64_t r1, int) { fn(r0, r1); });
    else
      fn(0, rows);
  }
};

// Attention (archs-gguf.md §4.0, §4.1): q, k, v projections (+ biases, per-head q/k RMSNorm,
// RoPE), K and V into the rows' cells of layer `layer`, attention per sequence over its
// visible cells (causal, or every cell when !d.causal), and the output projection. h: [n][I]
// rows, I = d.input_width or n_embd.
void attention_mixer(const ForwardPass& p, int64_t layer, const AttentionDesc& d,
                     const AttentionWeights& w, const float* h, float* out);

// Gated DeltaNet (archs-gguf.md §4.3): [q|k|v] = Wqkv h, z = Wz h, β/α logits; per sequence the
// causal conv (state + snapshots of layer `layer` from p.rs), L2 norm of the q and k heads, the
// gated delta rule in its per-token form (state + snapshots), then RMSNorm(o)·w ⊙ silu(z) per
// v-head and the output projection. Each row's result depends only on its sequence's earlier
// rows, so batched decode is bitwise token-by-token decode.
void gated_delta_mixer(const ForwardPass& p, int64_t layer, const GdnDesc& d, const GdnWeights& w,
                       const float* h, float* out);

// KV injection (DFlash, reference/dspark-dflash-spec.md §1.3): K and V of layer `layer`
// computed from the rows `c` [n][E] exactly as attention_mixer computes them from its input,
// and written into the rows' cells, without attention or output.
void attention_inject(const ForwardPass& p, int64_t layer, const AttentionDesc& d,
                      const AttentionWeights& w, const float* c);

// Mamba2 (archs-gguf.md §4.4): zxbcdt = W_in h; per sequence, in batch order, xBC = silu(conv(xBC)
// + bias) and the selective scan, stepping the sequence's conv and SSM state token by token
// (so verification rows give bitwise the states and outputs single-token decode gives) and
// writing the state after each row into the snapshot planes RecurrentState::rows asks for;
// y = RMSNorm_G(y ⊙ silu(z)) * norm; out = W_out y.
void mamba2_mixer(const ForwardPass& p, int64_t layer, const Mamba2Desc& d,
                  const Mamba2Weights& w, const float* h, float* out);

// The attention sublayer of an EAGLE-3 layer (desc.h LayerDesc::eagle3_input, reference
// llamacpp-speculative.md §6): h [n][2E] = [RMSNorm(embedding of each row's token) * attn_norm ;
// RMSNorm(x) * hidden_norm], then x += attention(h) (norm_before_residual: x is first replaced by
// its normed half). tokens [n]; x [n][E]; h [n][2E] and y [n][E] are the caller's scratch.
void eagle3_mixer(const ForwardPass& p, int64_t layer, const LayerDesc& L, const LayerWeights& W,
                  const kernels::WeightView& token_embd, const int32_t* tokens, float* x, float* h,
                  float* y);

// out = act(gate, up) for a gated activation (SwiGLU, GEGLU, gpt-oss's clamped SwiGLU): the one
// place a dense feed-forward and the experts of a MoE apply theirs. [n] f32, out may alias.
void gated_activation(FfnAct act, const float* gate, const float* up, float* out, int64_t n);

// Dense feed-forward (desc.h FfnAct): out = Wdown · (silu(Wgate h) ⊙ Wup h) for SwiGLU,
// out = Wdown · relu(Wup h)² for ReLU².
void dense_ffn(const ForwardPass& p, FfnAct act, int64_t n_ff, const FfnWeights& w, const float* h,
               float* out);

// Mixture of experts (desc.h MoeDesc; archs-gguf.md §4.0 "Generic MoE", §4.4): router, gating,
// top-k on the probabilities plus an optional selection bias, optional renormalisation and
// scale; SwiGLU or ReLU² experts on h or on its latent projection; every active expert runs once
// over the rows routed to it, and each row sums its experts' outputs in the order of its
// choices, so a row's result does not depend on which other rows share the batch; then the
// optional shared expert (dense_ffn, optionally scaled by a per-row sigmoid gate) is added.
// x [n][E]: the residual rows, read only with MoeDesc::residual_branches (Gemma 4).
void moe_ffn(const ForwardPass& p, const MoeDesc& d, const MoeWeights& w, const float* h,
             const float* x, float* out);

// Per-layer embeddings (Gemma 4 E-series; archs-gguf.md §4.5), the inputs of every layer from
// the chunk's tokens and scaled embedding rows x [n][E]:
//   s.ple_in[r][l] = (RMSNorm_P(model_proj · x[r] / sqrt(E)) · proj_norm
//                     + token_embd[tokens[r]][l] · sqrt(P)) / sqrt(2)
void per_layer_inputs(const ForwardPass& p, const PerLayerEmbdWeights& w, const int32_t* tokens,
                      const float* x);
// Layer l's branch on its output rows x [n][E] (in place):
//   x += post_norm(proj · (gelu(gate · x) ⊙ s.ple_in[.][l])); y [n][E] is scratch.
void per_layer_branch(const ForwardPass& p, int64_t l, const PerLayerBranchWeights& w, float* x, float* y);

// DFlash2's block-local dynamic convolution (dspark-dflash-spec.md §2.1) of side 0 (on a
// sublayer's input) or 1 (on its output), over each sequence's rows of the chunk in batch order:
// out[t][c] = Σ_τ (base[side][τ][c] + Δ_t[side][τ][c / g]) · y[t − τ][c], taps inside the
// sequence's rows. `delta` [n][2*K*G] holds proj · (the sublayer's normed input), computed by
// the caller before side 0.
void block_conv(const ForwardPass& p, const BlockConvWeights& w, const float* delta, int side,
                const float* y, float* out);

}  // namespace fulgur
