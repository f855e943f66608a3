#include "model/context.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/layer_norm.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/desc.h"
#include "model/kv_cache.h"
#include "model/layers/layers.h"
#include "model/recurrent_state.h"
#include "model/seq_state.h"
#include "model/weights.h"

namespace fulgur {

// What a context holds that only the forward reads: the memory and the per-chunk scratch.
struct Context::Memory {
  // [0]: the layers that see every earlier position (and the context's cell bookkeeping);
  // [1]: the sliding-window layers, bounded by the window (empty without such layers).
  KvCache kv[kKvCaches];
  RecurrentState rs;  // empty unless the model has recurrent layers
  LayerScratch scratch;
  std::vector<SeqGroup> groups;  // [n_groups_ used] this chunk's rows by sequence
};

Context::~Context() = default;

namespace {

// Cells of the sliding-window cache: what each sequence's rows can still see (the window,
// rounded up to whole attention tiles, kv_cache.h) plus a chunk of new rows, for every
// sequence; never more than the context.
int64_t window_cells(int32_t window, int64_t n_ctx, int64_t n_batch, int n_seq_max) {
  if (window == 0) return 1;
  return std::min<int64_t>(n_ctx, n_seq_max * (window + kernels::kAttnTileCells + n_batch));
}

void scale_in_place(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

// Gemma's final logit soft-capping c·tanh(x/c): bounded logits, so the verifier's p comes from
// the capped values as the sampler's does.
void softcap_in_place(float* x, float c, int64_t n) {
  const float inv = 1.0f / c;
  for (int64_t i = 0; i < n; ++i) x[i] = c * std::tanh(x[i] * inv);
}

}  // namespace

int64_t Context::n_ctx() const { return m_->kv[0].n_ctx(); }
int64_t Context::n_free_cells() const { return m_->kv[0].n_ctx() - m_->kv[0].used_cells(); }
int64_t Context::kv_bytes() const { return m_->kv[0].bytes() + m_->kv[1].bytes(); }
bool Context::can_rm(int seq, int32_t p0, int32_t p1) const {
  // Removing a tail from p0 needs the cells a row at p0 sees; the window cache may have
  // forgotten them.
  const bool tail = p1 < 0 || p1 > seq_pos_max(seq);
  return m_->rs.can_rm(seq, p0, p1) && (!tail || m_->kv[1].can_rm(seq, p0));
}
void Context::checkpoint(int seq) { m_->rs.checkpoint(seq); }

SeqState Context::save_seq(int seq) {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, "save_seq: sequence id ", seq, " is outside [0, ",
               kMaxSequences, ")");
  static_assert(kKvCaches == 2, "SeqState holds two KV caches");
  SeqState st;
  for (int c = 0; c < kKvCaches; ++c) st.kv[c] = m_->kv[c].copy_seq(seq);
  st.rs = m_->rs.copy_seq(seq);
  st.recurrent = !m_->rs.empty();
  st.window = m_->kv[1].window();
  st.n_pos = seq_pos_max(seq) + 1;
  return st;
}

void Context::load_seq(int seq, const SeqState& st) {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, "load_seq: sequence id ", seq, " is outside [0, ",
               kMaxSequences, ")");
  FULGUR_CHECK(st.recurrent == !m_->rs.empty() && st.window == m_->kv[1].window() && m_->kv[0].fits(st.kv[0]) &&
                   m_->kv[1].fits(st.kv[1]) && m_->rs.fits(st.rs),
               "load_seq: the state was saved from a context of another model (", model_.where(), ")");
  for (int c = 0; c < kKvCaches; ++c) {
    const int64_t need = static_cast<int64_t>(st.kv[c].pos.size());
    FULGUR_CHECK(need <= m_->kv[c].cells_available_to(seq), "context is full: restoring a cached prompt of ",
                 st.n_pos, " tokens needs ", need, " KV cells but only ", m_->kv[c].cells_available_to(seq),
                 " are available (raise the context size with -c)");
  }
  m_->rs.paste_seq(seq, st.rs);  // throws first when no recurrent slot is free
  for (int c = 0; c < kKvCaches; ++c) m_->kv[c].paste_seq(seq, st.kv[c]);
}

Context::Context(const Model& model, ContextParams params)
    : model_(model),
      desc_(model.desc()),
      n_batch_(std::max<int64_t>(1, params.n_batch)),
      own_pool_(params.shared_pool ? nullptr : std::make_unique<ThreadPool>(params.n_threads)),
      pool_(params.shared_pool ? *params.shared_pool : *own_pool_),
      n_seq_max_(params.n_seq_max),
      m_(std::make_unique<Memory>(Memory{
          .kv = {KvCache(desc_.kv_heads(0), desc_.kv_head_dims(0),
                         params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(desc_.n_ctx_train, 4096)),
                 KvCache(desc_.kv_heads(desc_.max_window()), desc_.kv_head_dims(desc_.max_window()),
                         window_cells(desc_.max_window(),
                                      params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(desc_.n_ctx_train, 4096),
                                      n_batch_, params.n_seq_max),
                         desc_.max_window())},
          .rs = RecurrentState(recurrent_sizes(desc_), params.n_seq_max, params.n_rollback),
          .scratch = LayerScratch(desc_, n_batch_),
          .groups = {}})) {
  const int64_t E = desc_.n_embd, B = n_batch_;
  x_.resize(B * E);
  int64_t h_width = E;  // an EAGLE-3 layer's mixer reads [embedding ; hidden]
  for (const LayerDesc& L : desc_.layers) h_width = std::max(h_width, L.attn.input_width);
  h_.resize(B * h_width);
  y_.resize(B * E);
  in_.resize(B * desc_.input_width());
  FULGUR_CHECK(desc_.n_rope_tables() <= kMaxRopeTables, model.where(), ": ", desc_.n_rope_tables(),
               " RoPE tables (at most ", kMaxRopeTables, ")");
  for (int64_t t = 0; t < desc_.n_rope_tables(); ++t) {
    const kernels::RopeParams& r = t == 0 ? desc_.rope : desc_.extra_ropes[static_cast<size_t>(t - 1)];
    rope_cs_[t].resize(B * 2 * r.n_rot);
  }
  for (const LayerDesc& L : desc_.layers) {
    FULGUR_CHECK(L.attn.window == 0 || L.attn.window == desc_.max_window(), model.where(),
                 ": sliding windows of different lengths (", L.attn.window, " and ", desc_.max_window(),
                 ") are not supported");
  }
  for (std::vector<int32_t>& c : cells_) c.resize(B);
  pos_.resize(B);
  seq_.resize(B);
  logits_.reserve(B * model.weights().output.rows);
}

void Context::set_taps(std::vector<int> layer_inputs) {
  const int64_t n_layer = desc_.n_layer();
  for (int t : layer_inputs) {
    FULGUR_CHECK(t >= 0 && t <= final_norm_tap(n_layer), "tap layer ", t, " is outside [0, ", n_layer + 1,
                 "] (the model has ", n_layer, " layers)");
  }
  taps_ = std::move(layer_inputs);
}

void Context::read_kv_from(const Context* other) {
  for (int64_t l = 0; other != nullptr && l < desc_.n_layer(); ++l) {
    const LayerDesc& L = desc_.layers[static_cast<size_t>(l)];
    if (L.mixer != MixerKind::kAttention || !L.attn.kv_external) continue;
    const AttentionDesc& a = L.attn;
    const KvCache& kv = other->m_->kv[kv_cache_of(a)];
    FULGUR_CHECK(kv.window() == a.window && kv.holds(a.kv_layer, a.n_head_kv, a.head_dim), model_.where(),
                 ": layer ", l, " attends to layer ", a.kv_layer, " of ", other->model_.where(),
                 ", whose context keeps no cache there with ", a.n_head_kv, " KV heads of ", a.head_dim,
                 " dims and window ", a.window);
  }
  kv_source_ = other;
}

void Context::validate(const Batch& b) const {
  const int64_t n = b.size();
  FULGUR_CHECK(n > 0, "empty batch");
  for (const LayerDesc& L : desc_.layers) {
    FULGUR_CHECK(kv_source_ != nullptr || L.mixer != MixerKind::kAttention || !L.attn.kv_external,
                 model_.where(), ": this model's layers attend to another context's KV cache, and "
                 "none is attached (Context::read_kv_from)");
  }
  FULGUR_CHECK(static_cast<int64_t>(b.seq.size()) == n && static_cast<int64_t>(b.output.size()) == n,
               "batch arrays disagree in length");
  const bool by_token = !b.tokens.empty();
  FULGUR_CHECK(by_token ? static_cast<int64_t>(b.tokens.size()) == n
                        : static_cast<int64_t>(b.embd.size()) == n * desc_.n_embd,
               "batch needs ", n, " tokens or ", n, " x ", desc_.n_embd, " embedding values");
  // Tokens and embedding rows together: the rows are the input (the input matrix is skipped)
  // and the tokens are there for the layers that read them (EAGLE-3's chain rows).
  const bool both = by_token && !b.embd.empty();
  FULGUR_CHECK(!both || (static_cast<int64_t>(b.embd.size()) == n * desc_.n_embd && b.aux.empty()),
               "a batch with tokens and embedding rows needs ", n, " x ", desc_.n_embd,
               " embedding values and no aux rows");
  const int64_t aux = both ? 0 : desc_.aux_width();
  FULGUR_CHECK(static_cast<int64_t>(b.aux.size()) == n * aux && (aux == 0 || by_token),
               model_.where(), ": this model's input takes ",
               aux > 0 ? cat("tokens and ", aux, " aux values per row") : std::string("no aux rows"),
               "; the batch has ", b.aux.size(), " aux values for ", n, " rows",
               by_token ? "" : " and no tokens");
  for (int64_t i = 0; i < n; ++i) {
    if (by_token) {
      FULGUR_CHECK(b.tokens[i] >= 0 && b.tokens[i] < model_.n_vocab(), "batch row ", i, ": token id ",
                   b.tokens[i], " is outside the vocabulary [0, ", model_.n_vocab(), ")");
    }
    FULGUR_CHECK(b.pos[i] >= 0, "batch row ", i, ": negative position ", b.pos[i]);
    FULGUR_CHECK(b.seq[i] >= 0 && b.seq[i] < kMaxSequences, "batch row ", i, ": sequence id ",
                 b.seq[i], " is outside [0, ", kMaxSequences, ")");
  }
  FULGUR_CHECK(n <= n_free_cells(), "context is full: ", n,
               " new tokens need KV cells but only ", n_free_cells(), " of ",
               n_ctx(), " are free (the prompt is longer than the context; raise -c)");
  if (m_->rs.empty()) return;
  // A recurrent state folds in its sequence's tokens in order: each sequence's rows must
  // continue it position by position.
  int32_t last[kMaxSequences];
  for (int q = 0; q < kMaxSequences; ++q) last[q] = m_->rs.next_pos(q) - 1;
  for (int64_t i = 0; i < n; ++i) {
    const int q = b.seq[i];
    FULGUR_CHECK(b.pos[i] == last[q] + 1, "batch row ", i, ": sequence ", q, " is at position ",
                 b.pos[i], " but a recurrent model needs position ", last[q] + 1,
                 " next (each sequence continues in order; seq_rm first to go back)");
    last[q] = b.pos[i];
  }
}

void Context::decode(const Batch& batch) {
  validate(batch);
  const int64_t n = batch.size();
  batch_rows_ = n;
  out_index_.assign(n, -1);
  int64_t n_out = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (batch.output[i]) out_index_[i] = n_out++;
  }
  logits_.resize(n_out * model_.weights().output.rows);
  hidden_.resize(n_out * desc_.n_embd);
  projected_.resize(n_out * model_.weights().hidden_proj.rows);
  tap_data_.resize(taps_.size() * n * desc_.n_embd);
  m_->scratch.moe_experts_run = m_->scratch.moe_layers_run = 0;
  for (int64_t begin = 0; begin < n; begin += n_batch_) {
    decode_chunk(batch, begin, std::min(n, begin + n_batch_));
  }
}

const float* Context::logits(int64_t row) const {
  FULGUR_CHECK(row >= 0 && row < batch_rows_ && out_index_[row] >= 0, "batch row ", row,
               " has no logits (it was not flagged for output)");
  return logits_.data() + out_index_[row] * model_.weights().output.rows;
}

const float* Context::projected_hidden(int64_t row) const {
  const int64_t P = model_.weights().hidden_proj.rows;
  FULGUR_CHECK(P > 0, model_.where(), ": this model has no hidden-state projection");
  FULGUR_CHECK(row >= 0 && row < batch_rows_ && out_index_[row] >= 0, "batch row ", row,
               " has no projected hidden state (it was not flagged for output)");
  return projected_.data() + out_index_[row] * P;
}

const float* Context::hidden(int64_t row) const {
  FULGUR_CHECK(row >= 0 && row < batch_rows_ && out_index_[row] >= 0, "batch row ", row,
               " has no hidden state (it was not flagged for output)");
  return hidden_.data() + out_index_[row] * desc_.n_embd;
}

double Context::experts_per_moe_layer() const {
  if (m_->scratch.moe_layers_run == 0) return 0.0;
  return static_cast<double>(m_->scratch.moe_experts_run) / static_cast<double>(m_->scratch.moe_layers_run);
}

const float* Context::tap(int tap, int64_t row) const {
  FULGUR_CHECK(tap >= 0 && tap < static_cast<int>(taps_.size()) && row >= 0 && row < batch_rows_,
               "tap ", tap, " row ", row, " is out of range");
  return tap_data_.data() + (tap * batch_rows_ + row) * desc_.n_embd;
}

ForwardPass Context::begin_chunk(const int32_t* pos, const int32_t* seq, int64_t n, bool attends) {
  std::copy(pos, pos + n, pos_.begin());
  std::copy(seq, seq + n, seq_.begin());
  if (desc_.max_window() > 0) {  // the window cache forgets what these rows cannot see
    int32_t first[kMaxSequences];
    std::fill(std::begin(first), std::end(first), -1);
    for (int64_t i = 0; i < n; ++i) {
      if (first[seq[i]] < 0 || pos[i] < first[seq[i]]) first[seq[i]] = pos[i];
    }
    for (int q = 0; q < kMaxSequences; ++q) {
      if (first[q] >= 0) m_->kv[1].slide(q, first[q]);
    }
  }
  m_->kv[0].claim(n, pos_.data(), seq_.data(), cells_[0].data());
  if (desc_.max_window() > 0) m_->kv[1].claim(n, pos_.data(), seq_.data(), cells_[1].data());
  n_groups_ = 0;
  if (attends) {
    group_by_sequence(n);
    for (int64_t g = 0; g < n_groups_; ++g) {
      const SeqGroup& G = m_->groups[g];
      m_->rs.begin_rows(G.seq, G.row_pos[0], static_cast<int64_t>(G.rows.size()));
    }
  }
  if (desc_.uses_rope()) {
    for (int64_t t = 0; t < desc_.n_rope_tables(); ++t) {
      const kernels::RopeParams& r = t == 0 ? desc_.rope : desc_.extra_ropes[static_cast<size_t>(t - 1)];
      kernels::rope_cache(r, pos_.data(), n, rope_cs_[t].data());
    }
  }
  ForwardPass p;
  p.desc = &desc_;
  p.n = n;
  p.pos = pos_.data();
  p.seq = seq_.data();
  p.groups = m_->groups.data();
  p.n_groups = n_groups_;
  for (int c = 0; c < kKvCaches; ++c) {
    p.kv[c] = &m_->kv[c];
    p.cells[c] = cells_[c].data();
  }
  for (int64_t t = 0; t < desc_.n_rope_tables(); ++t) p.rope_cs[t] = rope_cs_[t].data();
  for (int c = 0; c < kKvCaches && kv_source_ != nullptr; ++c) p.ext_kv[c] = &kv_source_->m_->kv[c];
  p.rs = &m_->rs;
  p.s = &m_->scratch;
  p.pool = &pool_;
  return p;
}

void Context::decode_chunk(const Batch& batch, int64_t begin, int64_t end) {
  const int64_t n = end - begin, E = desc_.n_embd;
  const ModelWeights& w = model_.weights();
  input_rows(batch, begin, n);
  const ForwardPass p = begin_chunk(batch.pos.data() + begin, batch.seq.data() + begin, n, true);
  if (desc_.ple_width > 0) {
    FULGUR_CHECK(chunk_tokens_ != nullptr, model_.where(),
                 ": per-layer embeddings are looked up by token; the batch has embedding rows only");
    per_layer_inputs(p, w.ple, chunk_tokens_, x_.data());
  }
  for (int64_t l = 0; l <= desc_.n_layer(); ++l) {
    for (size_t t = 0; t < taps_.size(); ++t) {
      if (taps_[t] != l) continue;
      float* dst = tap_data_.data() + (t * batch_rows_ + begin) * E;
      std::memcpy(dst, x_.data(), n * E * sizeof(float));
    }
    if (l < desc_.n_layer()) layer(p, l);
  }
  for (size_t t = 0; t < taps_.size(); ++t) {
    if (taps_[t] == final_norm_tap(desc_.n_layer())) final_norm(x_.data(), tap_data_.data() + (t * batch_rows_ + begin) * E, n);
  }
  for (int64_t g = 0; g < n_groups_; ++g) {
    const SeqGroup& G = m_->groups[g];
    m_->rs.end_rows(G.seq, G.row_pos[0], static_cast<int64_t>(G.rows.size()));
  }

  // Final norm and the output head for the flagged rows only, gathered contiguously.
  int64_t first = -1, n_out = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = out_index_[begin + i];
    if (o < 0) continue;
    if (first < 0) first = o;
    final_norm(x_.data() + i * E, hidden_.data() + o * E, 1);
    ++n_out;
  }
  if (n_out > 0) {
    const int64_t V = w.output.rows;
    float* logits = logits_.data() + first * V;
    kernels::matmul(w.output, hidden_.data() + first * E, n_out, E, logits, V, &pool_);
    if (desc_.logit_softcap > 0.0f) softcap_in_place(logits, desc_.logit_softcap, n_out * V);
    if (const int64_t P = w.hidden_proj.rows; w.hidden_proj.data != nullptr) {
      kernels::matmul(w.hidden_proj, hidden_.data() + first * E, n_out, E, projected_.data() + first * P, P, &pool_);
    }
  }
}

void Context::final_norm(const float* x, float* y, int64_t n) const {
  const int64_t E = desc_.n_embd;
  const float* gain = model_.weights().output_norm.data;
  if (desc_.output_norm == OutputNorm::kLayerNorm) {
    kernels::layer_norm(x, gain, desc_.rms_eps, y, n, E, E, E);
  } else {
    kernels::rms_norm(x, gain, desc_.rms_eps, y, n, E, E, E);
  }
}

void Context::input_rows(const Batch& batch, int64_t begin, int64_t n) {
  const int64_t E = desc_.n_embd;
  const ModelWeights& w = model_.weights();
  chunk_tokens_ = batch.tokens.empty() ? nullptr : batch.tokens.data() + begin;
  if (!batch.embd.empty()) {
    std::memcpy(x_.data(), batch.embd.data() + begin * E, n * E * sizeof(float));
    return;
  }
  const kernels::WeightView& embd = w.token_embd;
  const int32_t* tokens = batch.tokens.data() + begin;
  if (desc_.input.empty()) {  // [n][E] embedding rows
    kernels::get_rows(embd.type, embd.data, embd.row_stride, embd.rows, E, tokens, n, x_.data(), E);
    if (desc_.embd_scale != 1.0f) scale_in_place(x_.data(), desc_.embd_scale, n * E);
    return;
  }
  // in: [n][W] the parts side by side (each normed with its gain), then x = fc · in.
  const int64_t W = desc_.input_width(), A = desc_.aux_width();
  int64_t col = 0, aux_col = 0;
  for (size_t i = 0; i < desc_.input.size(); ++i) {
    const InputPart& part = desc_.input[i];
    float* dst = in_.data() + col;
    if (part.token) {
      const kernels::WeightView& table = w.input.token_embd.data != nullptr ? w.input.token_embd : embd;
      kernels::get_rows(table.type, table.data, table.row_stride, table.rows, part.width, tokens, n, dst, W);
      if (part.scale != 1.0f) {
        for (int64_t r = 0; r < n; ++r) scale_in_place(dst + r * W, part.scale, part.width);
      }
    } else {
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(dst + r * W, batch.aux.data() + (begin + r) * A + aux_col, part.width * sizeof(float));
      }
      aux_col += part.width;
    }
    if (part.norm) kernels::rms_norm(dst, w.input.norms[i].data, desc_.rms_eps, dst, n, part.width, W, W);
    col += part.width;
  }
  kernels::matmul(w.input.fc, in_.data(), n, W, x_.data(), E, &pool_);
}

void Context::group_by_sequence(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    while (g < n_groups_ && m_->groups[g].seq != seq_[i]) ++g;
    if (g == n_groups_) {
      if (static_cast<int64_t>(m_->groups.size()) == n_groups_) m_->groups.emplace_back();
      m_->groups[g].seq = seq_[i];
      m_->groups[g].rows.clear();
      m_->groups[g].row_pos.clear();
      m_->groups[g].row_seq.clear();
      ++n_groups_;
    }
    m_->groups[g].rows.push_back(static_cast<int32_t>(i));
    m_->groups[g].row_pos.push_back(pos_[i]);
    m_->groups[g].row_seq.push_back(seq_[i]);
  }
  for (int64_t g = 0; g < n_groups_; ++g) {
    SeqGroup& G = m_->groups[g];
    for (int c = 0; c < (desc_.max_window() > 0 ? 2 : 1); ++c) {
      VisibleCells& v = G.visible[c];
      m_->kv[c].visible_cells(uint64_t{1} << G.seq, v.cells, v.pos, v.seq);
      if (kv_source_ == nullptr) continue;
      VisibleCells& e = G.ext_visible[c];
      kv_source_->m_->kv[c].visible_cells(uint64_t{1} << G.seq, e.cells, e.pos, e.seq);
    }
  }
}

void Context::layer(const ForwardPass& p, int64_t l) {
  const LayerDesc& L = desc_.layers[static_cast<size_t>(l)];
  const LayerWeights& W = model_.weights().layers[static_cast<size_t>(l)];
  const int64_t E = desc_.n_embd, n = p.n;
  LayerScratch& s = m_->scratch;
  // One sublayer: x += post_norm(f(RMSNorm(x) * norm)), with DFlash2's convolution around f
  // when present and the post-norm (Gemma's sandwich) when the layer has one.
  const auto sublayer = [&](const VectorView& norm, const BlockConvWeights& conv,
                            const VectorView& post_norm, auto&& f) {
    p.for_rows(n, [&](int64_t r0, int64_t r1) {
      kernels::rms_norm(x_.data() + r0 * E, norm.data, desc_.rms_eps, h_.data() + r0 * E,
                        r1 - r0, E, E, E);
    });
    const float* y = y_.data();
    if (conv.proj.data != nullptr) {
      kernels::matmul(conv.proj, h_.data(), n, E, s.conv_delta.data(), conv.proj.rows, p.pool);
      block_conv(p, conv, s.conv_delta.data(), 0, h_.data(), s.conv_out.data());
      f(s.conv_out.data(), y_.data());
      block_conv(p, conv, s.conv_delta.data(), 1, y_.data(), s.conv_out.data());
      y = s.conv_out.data();
    } else {
      f(h_.data(), y_.data());
    }
    p.for_rows(n, [&](int64_t r0, int64_t r1) {
      if (post_norm.data != nullptr) {
        kernels::rms_norm(y + r0 * E, post_norm.data, desc_.rms_eps, h_.data() + r0 * E, r1 - r0, E, E, E);
        kernels::add(x_.data() + r0 * E, h_.data() + r0 * E, x_.data() + r0 * E, (r1 - r0) * E);
      } else {
        kernels::add(x_.data() + r0 * E, y + r0 * E, x_.data() + r0 * E, (r1 - r0) * E);
      }
    });
  };
  switch (L.mixer) {
    case MixerKind::kNone: break;
    case MixerKind::kAttention:
      if (L.eagle3_input) {
        FULGUR_CHECK(chunk_tokens_ != nullptr, model_.where(),
                     ": an EAGLE-3 layer reads each row's token; the batch has embedding rows only");
        eagle3_mixer(p, l, L, W, model_.weights().token_embd, chunk_tokens_, x_.data(), h_.data(),
                     y_.data());
        break;
      }
      sublayer(W.mixer_norm, W.mixer_conv, W.mixer_post_norm, [&](const float* in, float* out) {
        attention_mixer(p, l, L.attn, W.attn, in, out);
      });
      break;
    case MixerKind::kGatedDeltaNet:
      sublayer(W.mixer_norm, W.mixer_conv, W.mixer_post_norm, [&](const float* in, float* out) {
        gated_delta_mixer(p, l, L.gdn, W.gdn, in, out);
      });
      break;
    case MixerKind::kMamba2:
      sublayer(W.mixer_norm, W.mixer_conv, W.mixer_post_norm, [&](const float* in, float* out) {
        mamba2_mixer(p, l, L.ssm, W.ssm, in, out);
      });
      break;
  }
  switch (L.ffn) {
    case FfnKind::kNone: break;
    case FfnKind::kSwiGlu:
    case FfnKind::kRelu2:
    case FfnKind::kGeGlu:
      sublayer(W.ffn_norm, W.ffn_conv, W.ffn_post_norm, [&](const float* in, float* out) {
        dense_ffn(p, dense_ffn_act(L.ffn), L.n_ff, W.ffn, in, out);
      });
      break;
    case FfnKind::kMoe:
      sublayer(W.ffn_norm, W.ffn_conv, W.ffn_post_norm, [&](const float* in, float* out) {
        moe_ffn(p, L.moe, W.moe, in, x_.data(), out);
      });
      break;
  }
  if (desc_.ple_width > 0) per_layer_branch(p, l, W.ple, x_.data(), y_.data());
  if (L.output_scale) {
    const float scale = W.output_scale.data[0];
    p.for_rows(n, [&](int64_t r0, int64_t r1) {
      scale_in_place(x_.data() + r0 * E, scale, (r1 - r0) * E);
    });
  }
}

void Context::inject_kv(const float* features, const int32_t* pos, const int32_t* seq, int64_t n) {
  const ModelWeights& w = model_.weights();
  FULGUR_CHECK(w.inject_fc.data != nullptr, model_.where(),
               ": this model has no KV injection input (only `dflash` block drafters do)");
  const int64_t E = desc_.n_embd, in_width = w.inject_fc.cols;
  for (int64_t i = 0; i < n; ++i) {
    FULGUR_CHECK(seq[i] >= 0 && seq[i] < kMaxSequences && pos[i] >= 0, "inject_kv: row ", i,
                 " has sequence ", seq[i], " and position ", pos[i]);
    for (KvCache& kv : m_->kv) kv.seq_rm(seq[i], pos[i], pos[i] + 1);
  }
  FULGUR_CHECK(n <= n_free_cells(), "context is full: ", n,
               " injected rows need KV cells but only ", n_free_cells(),
               " are free");
  for (int64_t begin = 0; begin < n; begin += n_batch_) {
    const int64_t c = std::min(n_batch_, n - begin);
    // h: [c][E] = RMSNorm(fc · features) * inject_norm
    kernels::matmul(w.inject_fc, features + begin * in_width, c, in_width, h_.data(), E, &pool_);
    kernels::rms_norm(h_.data(), w.inject_norm.data, desc_.rms_eps, h_.data(), c, E, E, E);
    const ForwardPass p = begin_chunk(pos + begin, seq + begin, c, false);
    for (int64_t l = 0; l < desc_.n_layer(); ++l) {
      const LayerDesc& L = desc_.layers[static_cast<size_t>(l)];
      if (L.mixer != MixerKind::kAttention) continue;
      attention_inject(p, l, L.attn, model_.weights().layers[static_cast<size_t>(l)].attn, h_.data());
    }
  }
}

bool Context::seq_rm(int seq, int32_t p0, int32_t p1) {
  FULGUR_CHECK(seq < kMaxSequences, "seq_rm: sequence id ", seq, " is outside [0, ", kMaxSequences, ")");
  if (seq >= 0 && !can_rm(seq, p0, p1)) return false;
  if (!m_->rs.seq_rm(seq, p0, p1)) return false;
  for (KvCache& kv : m_->kv) kv.seq_rm(seq, p0, p1);
  return true;
}

void Context::seq_cp(int src, int dst, int32_t p0, int32_t p1) {
  FULGUR_CHECK(src >= 0 && src < kMaxSequences && dst >= 0 && dst < kMaxSequences,
               "seq_cp: sequence ids ", src, " and ", dst, " must be in [0, ", kMaxSequences, ")");
  for (KvCache& kv : m_->kv) kv.seq_cp(src, dst, p0, p1);
  m_->rs.seq_cp(src, dst);
}

void Context::reserve_rollback(int rows) {
  if (m_->rs.empty() || rows <= m_->rs.n_snapshots()) return;
  for (int q = 0; q < kMaxSequences; ++q) {
    FULGUR_CHECK(m_->rs.next_pos(q) == 0, "the rollback of a recurrent model can only grow before "
                 "its first decode (sequence ", q, " holds state)");
  }
  m_->rs = RecurrentState(recurrent_sizes(desc_), n_seq_max_, rows);
}

void Context::seq_keep(int seq) {
  FULGUR_CHECK(seq >= 0 && seq < kMaxSequences, "seq_keep: sequence id ", seq,
               " is outside [0, ", kMaxSequences, ")");
  for (KvCache& kv : m_->kv) kv.seq_keep(seq);
  m_->rs.seq_keep(seq);
}

int32_t Context::seq_pos_max(int seq) const {
  // A model may keep a sequence in either KV cache or only in recurrent state.
  int32_t p = std::max(m_->kv[0].seq_pos_max(seq), m_->kv[1].seq_pos_max(seq));
  if (!m_->rs.empty()) p = std::max(p, m_->rs.next_pos(seq) - 1);
  return p;
}

void Context::clear() {
  for (KvCache& kv : m_->kv) kv.clear();
  m_->rs.clear();
}

}  // namespace fulgur
