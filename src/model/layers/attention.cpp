#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/layers/layers.h"

namespace fulgur {
namespace {

// y[r] += b for every row: the projection biases (qwen2, gpt-oss).
void add_bias(float* y, const VectorView& b, int64_t n, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) kernels::add(y + r * ld, b.data, y + r * ld, b.size);
}

// Rows [r0, r1) of k and v [n][Hkv*Dh]: bias, k's per-head RMSNorm and RoPE, v's weightless
// RMSNorm (v_norm), then both into the rows' cells of the layer's cache (f16, model/kv_cache.h).
void finish_kv(const ForwardPass& p, int64_t layer, const AttentionDesc& d,
               const AttentionWeights& w, int64_t r0, int64_t r1) {
  const int64_t Dh = d.head_dim, Hkv = d.n_head_kv, kv_width = d.kv_width(), m = r1 - r0;
  const int64_t n_rot = p.desc->rope_of(d).n_rot;
  const float eps = p.desc->rms_eps;
  float* k = p.s->k.data() + r0 * kv_width;
  float* v = p.s->v.data() + r0 * kv_width;
  if (d.v_from_k) std::memcpy(v, k, m * kv_width * sizeof(float));  // K's projection, unnormed
  if (d.qkv_bias) {
    add_bias(k, w.bk, m, kv_width);
    add_bias(v, w.bv, m, kv_width);
  }
  if (d.qk_norm) kernels::rms_norm(k, w.k_norm.data, eps, k, m * Hkv, Dh, Dh, Dh);
  if (d.v_norm) kernels::rms_norm(v, nullptr, eps, v, m * Hkv, Dh, Dh, Dh);
  if (d.rope) {
    kernels::rope_apply(k, m, Hkv, Dh, kv_width, n_rot, p.desc->rope_of(d).mode,
                        p.rope_cs[d.rope_table] + r0 * 2 * n_rot);
  }
  const int c = kv_cache_of(d);
  KvCache& kv = *p.kv[c];
  uint16_t* kc = kv.k(layer);
  uint16_t* vc = kv.v(layer);
  for (int64_t i = r0; i < r1; ++i) {
    for (int64_t g = 0; g < Hkv; ++g) {
      const int64_t row = kv.row(layer, g, p.cells[c][i]);
      kernels::to_f16(p.s->k.data() + i * kv_width + g * Dh, kc + row, Dh);
      kernels::to_f16(p.s->v.data() + i * kv_width + g * Dh, vc + row, Dh);
    }
  }
}

// attn [n][H*Dh] = softmax(q·K)·V of every row, one sequence at a time, over the cache of
// layer `layer` (or of the layer it shares K and V with, in this context or, for kv_external
// layers, in the one Context::read_kv_from names).
void attend(const ForwardPass& p, int64_t layer, const AttentionDesc& d, const AttentionWeights& w) {
  LayerScratch& s = *p.s;
  const int64_t q_width = d.q_width();
  const int c = kv_cache_of(d);
  const KvCache& kv = d.kv_external ? *p.ext_kv[c] : *p.kv[c];
  const int64_t kv_layer = d.owns_kv() ? layer : d.kv_layer;
  kernels::AttentionArgs a;
  a.n_heads = d.n_head;
  a.n_kv_heads = d.n_head_kv;
  a.head_dim = d.head_dim;
  a.k = kv.k(kv_layer);
  a.v = kv.v(kv_layer);
  a.n_ctx = kv.n_ctx();
  a.kv_block_cells = kv.block_cells();
  a.kv_block_stride = kv.block_stride();
  a.mask = d.causal ? kernels::AttnMask::kCausal : kernels::AttnMask::kFull;
  a.window = d.window;
  a.scale = d.kq_scale;
  a.sinks = d.sinks ? w.sinks.data : nullptr;
  a.q_row_stride = q_width;
  a.out_row_stride = q_width;
  // One sequence (the usual case) reads q and writes the output in place.
  const bool direct = p.n_groups == 1;
  for (int64_t g = 0; g < p.n_groups; ++g) {
    const SeqGroup& G = p.groups[g];
    const int64_t rows = static_cast<int64_t>(G.rows.size());
    if (!direct) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(s.q_gather.data() + r * q_width, s.q.data() + G.rows[r] * q_width,
                    q_width * sizeof(float));
      }
    }
    a.q = direct ? s.q.data() : s.q_gather.data();
    a.out = direct ? s.attn.data() : s.out_gather.data();
    a.n_rows = rows;
    const VisibleCells& cells = d.kv_external ? G.ext_visible[c] : G.visible[c];
    // A row always sees its own cell; a row reading another context's cache may see none.
    FULGUR_CHECK(!cells.cells.empty(), "layer ", layer, ": sequence ", G.seq, " holds no position in the context ",
                 "whose KV cache this layer attends to (a row must follow at least one there)");
    a.cells = cells.cells.data();
    a.cell_pos = cells.pos.data();
    a.cell_seq = cells.seq.data();
    a.n_cells = static_cast<int64_t>(cells.cells.size());
    a.row_pos = G.row_pos.data();
    a.row_seq = G.row_seq.data();
    kernels::attention(a, p.pool);
    if (!direct) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(s.attn.data() + G.rows[r] * q_width, s.out_gather.data() + r * q_width,
                    q_width * sizeof(float));
      }
    }
  }
}

}  // namespace

void attention_mixer(const ForwardPass& p, int64_t layer, const AttentionDesc& d,
                     const AttentionWeights& w, const float* h, float* out) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, Dh = d.head_dim, H = d.n_head;
  const int64_t q_width = d.q_width(), kv_width = d.kv_width(), n_rot = p.desc->rope_of(d).n_rot;
  // q (or q with each head's gate rows), and unless the layer reads another's cache k and v
  // (v = k's projection when it has no attn_v): [n][H*Dh] ([n][H][2][Dh]), [n][Hkv*Dh] x2.
  kernels::MatmulOut qkv[3] = {
      d.output_gate ? kernels::MatmulOut{&w.wq, s.q_and_gate.data(), 2 * q_width}
                    : kernels::MatmulOut{&w.wq, s.q.data(), q_width},
      {&w.wk, s.k.data(), kv_width},
      {&w.wv, s.v.data(), kv_width}};
  const int n_proj = !d.owns_kv() ? 1 : d.v_from_k ? 2 : 3;
  kernels::matmul_many(qkv, n_proj, h, p.n, d.input_width > 0 ? d.input_width : E, p.pool);
  p.for_rows(p.n, [&](int64_t r0, int64_t r1) {
    float* q = s.q.data() + r0 * q_width;
    const int64_t m = r1 - r0;
    if (d.output_gate) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t hd = 0; hd < H; ++hd) {
          const float* src = s.q_and_gate.data() + (r * H + hd) * 2 * Dh;
          std::memcpy(s.q.data() + r * q_width + hd * Dh, src, Dh * sizeof(float));
          std::memcpy(s.attn_gate.data() + r * q_width + hd * Dh, src + Dh, Dh * sizeof(float));
        }
      }
    }
    if (d.qkv_bias) add_bias(q, w.bq, m, q_width);
    if (d.qk_norm) kernels::rms_norm(q, w.q_norm.data, p.desc->rms_eps, q, m * H, Dh, Dh, Dh);
    if (d.rope) {
      kernels::rope_apply(q, m, H, Dh, q_width, n_rot, p.desc->rope_of(d).mode,
                          p.rope_cs[d.rope_table] + r0 * 2 * n_rot);
    }
    if (d.owns_kv()) finish_kv(p, layer, d, w, r0, r1);
  });
  attend(p, layer, d, w);
  if (d.output_gate) {
    p.for_rows(p.n, [&](int64_t r0, int64_t r1) {
      float* g = s.attn_gate.data() + r0 * q_width;
      float* a = s.attn.data() + r0 * q_width;
      kernels::sigmoid(g, g, (r1 - r0) * q_width);
      kernels::mul(a, g, a, (r1 - r0) * q_width);
    });
  }
  kernels::matmul(w.wo, s.attn.data(), p.n, q_width, out, E, p.pool);
  if (d.out_bias) add_bias(out, w.bo, p.n, E);
}

void attention_inject(const ForwardPass& p, int64_t layer, const AttentionDesc& d,
                      const AttentionWeights& w, const float* c) {
  LayerScratch& s = *p.s;
  const int64_t E = p.desc->n_embd, kv_width = d.kv_width();
  const kernels::MatmulOut kv[] = {{&w.wk, s.k.data(), kv_width}, {&w.wv, s.v.data(), kv_width}};
  kernels::matmul_many(kv, d.v_from_k ? 1 : 2, c, p.n, E, p.pool);
  p.for_rows(p.n, [&](int64_t r0, int64_t r1) { finish_kv(p, layer, d, w, r0, r1); });
}

}  // namespace fulgur
