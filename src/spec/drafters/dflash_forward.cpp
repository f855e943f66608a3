#include "spec/drafters/dflash_forward.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace fulgur {
namespace {

void mm(const kernels::WeightView& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  kernels::matmul(w, x, n, w.cols, y, w.rows, &pool);
}

int64_t max_of(const std::vector<int64_t>& v) { return *std::max_element(v.begin(), v.end()); }

// Rows of K/V written into their cells: cache [Hkv][n_ctx][Dh] f16.
void store_kv(KvCache& kv, int64_t l, const float* k, const float* v, const int32_t* cells,
              int64_t n, int64_t n_kv_heads, int64_t Dh) {
  const int64_t n_ctx = kv.n_ctx(), width = n_kv_heads * Dh;
  uint16_t* kc = kv.k(l);
  uint16_t* vc = kv.v(l);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t g = 0; g < n_kv_heads; ++g) {
      kernels::to_f16(k + i * width + g * Dh, kc + (g * n_ctx + cells[i]) * Dh, Dh);
      kernels::to_f16(v + i * width + g * Dh, vc + (g * n_ctx + cells[i]) * Dh, Dh);
    }
  }
}

}  // namespace

DflashForward::DflashForward(const DflashModel& model, int64_t n_ctx, int max_blocks,
                             ThreadPool& pool)
    : model_(model),
      hp_(model.hparams()),
      pool_(pool),
      kv_(hp_.n_head_kv, hp_.head_dim, n_ctx),
      max_blocks_(std::max(1, max_blocks)),
      n_chunk_(256),
      B_(hp_.block_size) {
  const int64_t E = hp_.n_embd, Dh = hp_.head_dim;
  const int64_t rows = std::max<int64_t>(n_chunk_, max_blocks_ * B_);
  const int64_t qw = max_of(hp_.n_head) * Dh, kvw = max_of(hp_.n_head_kv) * Dh;
  feat_.resize(n_chunk_ * E);
  x_.resize(rows * E);
  h_.resize(rows * E);
  h2_.resize(rows * E);
  q_.resize(rows * qw);
  k_.resize(rows * kvw);
  v_.resize(rows * kvw);
  attn_.resize(rows * qw);
  gate_.resize(rows * max_of(hp_.n_ff));
  up_.resize(rows * max_of(hp_.n_ff));
  if (hp_.kind == DflashKind::kDflash2) {
    delta_.resize(rows * 2 * hp_.conv_kernel * (E / hp_.conv_group));
  }
  rope_cs_.resize(rows * 2 * hp_.rope.n_rot);
  cells_.resize(rows);
  pos_.resize(rows);
  seq_.resize(rows);
  tok_.resize(rows);
  row_seq_.resize(B_);
}

void DflashForward::inject(const float* features, const int32_t* pos, const int32_t* seq,
                           int64_t n) {
  const DflashWeights& w = model_.weights();
  const int64_t E = hp_.n_embd, Dh = hp_.head_dim, in_width = w.fc.cols;
  for (int64_t i = 0; i < n; ++i) kv_.seq_rm(seq[i], pos[i], pos[i] + 1);
  for (int64_t begin = 0; begin < n; begin += n_chunk_) {
    const int64_t c = std::min(n_chunk_, n - begin);
    // feat: [c][E] = enc_norm(fc · f)
    mm(w.fc, features + begin * in_width, c, feat_.data(), pool_);
    kernels::rms_norm(feat_.data(), w.enc_norm, hp_.rms_eps, feat_.data(), c, E, E, E);
    kv_.claim(c, pos + begin, seq + begin, cells_.data());
    kernels::rope_cache(hp_.rope, pos + begin, c, rope_cs_.data());
    for (int64_t l = 0; l < hp_.n_layer; ++l) {
      const DflashLayer& L = w.layers[l];
      const int64_t Hkv = hp_.n_head_kv[l], kvw = Hkv * Dh;
      mm(L.wk, feat_.data(), c, k_.data(), pool_);
      mm(L.wv, feat_.data(), c, v_.data(), pool_);
      kernels::rms_norm(k_.data(), L.k_norm, hp_.rms_eps, k_.data(), c * Hkv, Dh, Dh, Dh);
      kernels::rope_apply(k_.data(), c, Hkv, Dh, kvw, hp_.rope.n_rot, hp_.rope.mode,
                          rope_cs_.data());
      store_kv(kv_, l, k_.data(), v_.data(), cells_.data(), c, Hkv, Dh);
    }
  }
}

void DflashForward::run_blocks(std::span<const DflashBlock> blocks) {
  const DflashWeights& w = model_.weights();
  const int64_t nb = static_cast<int64_t>(blocks.size()), E = hp_.n_embd, n = nb * B_;
  FULGUR_CHECK(nb >= 1 && nb <= max_blocks_, "dflash: ", nb, " blocks in one call; at most ",
               max_blocks_);
  uint64_t seen = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const DflashBlock& blk = blocks[b];
    FULGUR_CHECK(blk.seq >= 0 && blk.seq < kMaxSequences && !((seen >> blk.seq) & 1),
                 "dflash: block ", b, " has sequence ", blk.seq,
                 " (must be in [0, 64) and distinct within a call)");
    seen |= uint64_t{1} << blk.seq;
    FULGUR_CHECK(blk.anchor >= 0 && blk.anchor < w.token_embd.rows, "dflash: anchor token ",
                 blk.anchor, " is outside the vocabulary");
    // Only committed positions < anchor_pos may be visible to the block.
    kv_.seq_rm(blk.seq, blk.anchor_pos, -1);
    for (int64_t s = 0; s < B_; ++s) {
      const int64_t r = b * B_ + s;
      tok_[r] = s == 0 ? blk.anchor : hp_.mask_token;
      pos_[r] = blk.anchor_pos + static_cast<int32_t>(s);
      seq_[r] = blk.seq;
    }
  }
  n_blocks_ = nb;
  kernels::get_rows(w.token_embd.type, w.token_embd.data, w.token_embd.row_stride,
                    w.token_embd.rows, E, tok_.data(), n, x_.data(), E);
  kv_.claim(n, pos_.data(), seq_.data(), cells_.data());
  kernels::rope_cache(hp_.rope, pos_.data(), n, rope_cs_.data());
  for (int64_t l = 0; l < hp_.n_layer; ++l) layer(l, nb);
  kernels::rms_norm(x_.data(), w.output_norm, hp_.rms_eps, h_.data(), n, E, E, E);
  // Block rows never stay: the cache holds committed context only.
  for (const DflashBlock& blk : blocks) kv_.seq_rm(blk.seq, blk.anchor_pos, -1);
}

const float* DflashForward::hidden(int64_t block, int64_t slot) const {
  return h_.data() + (block * B_ + slot) * hp_.n_embd;
}

void DflashForward::logits(const float* hidden, float* out) {
  const kernels::WeightView& o = model_.weights().output;
  kernels::matmul(o, hidden, 1, o.cols, out, o.rows, &pool_);
}

// out[t][c] = Σ_τ (base[side][τ][c] + Δ_t[side][τ][c / g]) · y[t − τ][c], taps inside the block.
void DflashForward::conv(const float* base, const float* delta, int side, const float* y,
                         float* out, int64_t n_blocks) const {
  const int64_t E = hp_.n_embd, K = hp_.conv_kernel, g = hp_.conv_group, G = E / g;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t t = 0; t < B_; ++t) {
      const int64_t r = b * B_ + t;
      const float* d = delta + r * 2 * K * G + side * K * G;  // [K][G]
      float* o = out + r * E;
      std::fill(o, o + E, 0.0f);
      for (int64_t tau = 0; tau < K && tau <= t; ++tau) {
        const float* bs = base + (side * K + tau) * E;
        const float* yr = y + (r - tau) * E;
        for (int64_t c = 0; c < E; ++c) o[c] += (bs[c] + d[tau * G + c / g]) * yr[c];
      }
    }
  }
}

void DflashForward::layer(int64_t l, int64_t nb) {
  const DflashLayer& L = model_.weights().layers[l];
  const int64_t E = hp_.n_embd, Dh = hp_.head_dim, H = hp_.n_head[l], Hkv = hp_.n_head_kv[l];
  const int64_t qw = H * Dh, kvw = Hkv * Dh, F = hp_.n_ff[l], n = nb * B_;
  const bool dflash2 = hp_.kind == DflashKind::kDflash2;

  // Attention sublayer. h: [n][E]; q, k, v: [n][H*Dh], [n][Hkv*Dh] x2.
  kernels::rms_norm(x_.data(), L.attn_norm, hp_.rms_eps, h_.data(), n, E, E, E);
  const float* src = h_.data();
  if (dflash2) {
    mm(L.attn_conv_proj, h_.data(), n, delta_.data(), pool_);
    conv(L.attn_conv_base, delta_.data(), 0, h_.data(), h2_.data(), nb);
    src = h2_.data();
  }
  mm(L.wq, src, n, q_.data(), pool_);
  mm(L.wk, src, n, k_.data(), pool_);
  mm(L.wv, src, n, v_.data(), pool_);
  kernels::rms_norm(q_.data(), L.q_norm, hp_.rms_eps, q_.data(), n * H, Dh, Dh, Dh);
  kernels::rms_norm(k_.data(), L.k_norm, hp_.rms_eps, k_.data(), n * Hkv, Dh, Dh, Dh);
  kernels::rope_apply(q_.data(), n, H, Dh, qw, hp_.rope.n_rot, hp_.rope.mode, rope_cs_.data());
  kernels::rope_apply(k_.data(), n, Hkv, Dh, kvw, hp_.rope.n_rot, hp_.rope.mode, rope_cs_.data());
  store_kv(kv_, l, k_.data(), v_.data(), cells_.data(), n, Hkv, Dh);

  kernels::AttentionArgs a;
  a.n_heads = H;
  a.n_kv_heads = Hkv;
  a.head_dim = Dh;
  a.k = kv_.k(l);
  a.v = kv_.v(l);
  a.n_ctx = kv_.n_ctx();
  a.mask = hp_.causal ? kernels::AttnMask::kCausal : kernels::AttnMask::kFull;
  a.q_row_stride = qw;
  a.out_row_stride = qw;
  a.n_rows = B_;
  for (int64_t b = 0; b < nb; ++b) {
    const int seq = seq_[b * B_];
    kv_.visible_cells(uint64_t{1} << seq, vis_cells_, vis_pos_, vis_seq_);
    std::fill(row_seq_.begin(), row_seq_.end(), seq);
    a.q = q_.data() + b * B_ * qw;
    a.out = attn_.data() + b * B_ * qw;
    a.cells = vis_cells_.data();
    a.cell_pos = vis_pos_.data();
    a.cell_seq = vis_seq_.data();
    a.n_cells = static_cast<int64_t>(vis_cells_.size());
    a.row_pos = pos_.data() + b * B_;
    a.row_seq = row_seq_.data();
    kernels::attention(a, &pool_);
  }
  if (dflash2) {
    mm(L.wo, attn_.data(), n, h_.data(), pool_);
    conv(L.attn_conv_base, delta_.data(), 1, h_.data(), h2_.data(), nb);
  } else {
    mm(L.wo, attn_.data(), n, h2_.data(), pool_);
  }
  kernels::add(x_.data(), h2_.data(), x_.data(), n * E);

  // FFN sublayer: x += Wdown · (silu(Wgate u) ⊙ Wup u).
  kernels::rms_norm(x_.data(), L.ffn_norm, hp_.rms_eps, h_.data(), n, E, E, E);
  src = h_.data();
  if (dflash2) {
    mm(L.ffn_conv_proj, h_.data(), n, delta_.data(), pool_);
    conv(L.ffn_conv_base, delta_.data(), 0, h_.data(), h2_.data(), nb);
    src = h2_.data();
  }
  mm(L.gate, src, n, gate_.data(), pool_);
  mm(L.up, src, n, up_.data(), pool_);
  kernels::swiglu(gate_.data(), up_.data(), gate_.data(), n * F);
  if (dflash2) {
    mm(L.down, gate_.data(), n, h_.data(), pool_);
    conv(L.ffn_conv_base, delta_.data(), 1, h_.data(), h2_.data(), nb);
  } else {
    mm(L.down, gate_.data(), n, h2_.data(), pool_);
  }
  kernels::add(x_.data(), h2_.data(), x_.data(), n * E);
}

}  // namespace fulgur
