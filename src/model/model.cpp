#include "model/model.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace fulgur {
namespace {

uint64_t matrix_bytes(const kernels::WeightView& w) { return w.row_stride * w.rows; }

// y[r] += b for every row: the qwen2 projection biases.
void add_bias(float* y, const VectorView& b, int64_t n, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) kernels::add(y + r * ld, b.data, y + r * ld, b.size);
}

void mm(const kernels::WeightView& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  kernels::matmul(w, x, n, w.cols, y, w.rows, &pool);
}

}  // namespace

Model::Model(const std::string& path) : Model(GgufReader(path)) {}

Model::Model(GgufReader gguf)
    : gguf_(std::move(gguf)), hp_(read_hparams(gguf_)), w_(bind_weights(gguf_, hp_)) {
  hp_.n_vocab = w_.token_embd.rows;
  bytes_per_token_ = matrix_bytes(w_.output) + w_.token_embd.row_stride;
  for (const LayerWeights& L : w_.layers) {
    for (const kernels::WeightView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      bytes_per_token_ += matrix_bytes(*m);
  }
  pack_matrices();
}

void Model::pack_matrices() {
  std::vector<kernels::WeightView*> todo;
  for (LayerWeights& L : w_.layers) {
    for (kernels::WeightView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      todo.push_back(m);
  }
  todo.push_back(&w_.output);
  std::erase_if(todo, [](const kernels::WeightView* m) { return !kernels::should_pack(m->type); });
  if (todo.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto done = [&](const char* how) {
    pack_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log_info(how, " ", todo.size(), " matrices as 16-row tiles in ", pack_seconds_, " s");
  };
  // The mapped originals are not read again (a tied token_embd's lookups fault in single rows).
  const auto use = [&](kernels::WeightView* m, const kernels::WeightView& packed) {
    gguf_.drop_pages(m->data, matrix_bytes(*m));
    *m = packed;
  };

  std::unique_ptr<TileCache> cache;
  const char* dir = std::getenv("FULGUR_TILE_CACHE");
  if (dir != nullptr && *dir != '\0' && gguf_.is_mapped_file()) {
    cache = std::make_unique<TileCache>(
        dir, gguf_.name(), std::vector<const kernels::WeightView*>(todo.begin(), todo.end()));
    if (cache->open()) {
      for (size_t i = 0; i < todo.size(); ++i) use(todo[i], kernels::packed_view(*todo[i], cache->tiles(i)));
      tile_cache_ = std::move(cache);
      done("mapped");
      return;
    }
  }
  ThreadPool pool;  // load-time only: the contexts own the token-loop pools
  packed_.reserve(todo.size());
  for (kernels::WeightView* m : todo) {
    packed_.emplace_back(*m, &pool);
    use(m, packed_.back().view());
  }
  done("packed");
  if (cache == nullptr && pack_seconds_ > 1.0)
    log_info("FULGUR_TILE_CACHE=DIR keeps the tiles in a file, so the next load maps them");
  if (cache != nullptr) {
    std::vector<const uint8_t*> data;
    for (const kernels::PackedWeight& p : packed_) data.push_back(static_cast<const uint8_t*>(p.view().data));
    cache->write(data);
  }
}

Context::Context(const Model& model, ContextParams params)
    : model_(model),
      hp_(model.hparams()),
      n_batch_(std::max<int64_t>(1, params.n_batch)),
      own_pool_(params.shared_pool ? nullptr : std::make_unique<ThreadPool>(params.n_threads)),
      pool_(params.shared_pool ? *params.shared_pool : *own_pool_),
      kv_(hp_.n_head_kv, hp_.head_dim,
          params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(hp_.n_ctx_train, 4096)) {
  const int64_t E = hp_.n_embd, B = n_batch_;
  x_.resize(B * E);
  h_.resize(B * E);
  q_.resize(B * hp_.max_head_count() * hp_.head_dim);
  k_.resize(B * hp_.max_kv_width());
  v_.resize(B * hp_.max_kv_width());
  attn_.resize(q_.size());
  gate_.resize(B * hp_.max_ff());
  up_.resize(B * hp_.max_ff());
  rope_cs_.resize(B * 2 * hp_.rope.n_rot);
  cells_.resize(B);
  pos_.resize(B);
  seq_.resize(B);
  q_gather_.resize(q_.size());
  out_gather_.resize(q_.size());
  logits_.reserve(B * model.n_vocab());
}

void Context::set_taps(std::vector<int> layer_inputs) {
  for (int t : layer_inputs) {
    FULGUR_CHECK(t >= 0 && t <= hp_.n_layer, "tap layer ", t, " is outside [0, ", hp_.n_layer,
                 "] (the model has ", hp_.n_layer, " layers)");
  }
  taps_ = std::move(layer_inputs);
}

void Context::validate(const Batch& b) const {
  const int64_t n = b.size();
  FULGUR_CHECK(n > 0, "empty batch");
  FULGUR_CHECK(static_cast<int64_t>(b.seq.size()) == n && static_cast<int64_t>(b.output.size()) == n,
               "batch arrays disagree in length");
  const bool by_token = !b.tokens.empty();
  FULGUR_CHECK(by_token ? static_cast<int64_t>(b.tokens.size()) == n
                        : static_cast<int64_t>(b.embd.size()) == n * hp_.n_embd,
               "batch needs ", n, " tokens or ", n, " x ", hp_.n_embd, " embedding values");
  for (int64_t i = 0; i < n; ++i) {
    if (by_token) {
      FULGUR_CHECK(b.tokens[i] >= 0 && b.tokens[i] < model_.n_vocab(), "batch row ", i, ": token id ",
                   b.tokens[i], " is outside the vocabulary [0, ", model_.n_vocab(), ")");
    }
    FULGUR_CHECK(b.pos[i] >= 0, "batch row ", i, ": negative position ", b.pos[i]);
    FULGUR_CHECK(b.seq[i] >= 0 && b.seq[i] < kMaxSequences, "batch row ", i, ": sequence id ",
                 b.seq[i], " is outside [0, ", kMaxSequences, ")");
  }
  FULGUR_CHECK(kv_.used_cells() + n <= kv_.n_ctx(), "context is full: ", n,
               " new tokens need KV cells but only ", kv_.n_ctx() - kv_.used_cells(), " of ",
               kv_.n_ctx(), " are free (the prompt is longer than the context; raise -c)");
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
  logits_.resize(n_out * model_.n_vocab());
  tap_data_.resize(taps_.size() * n * hp_.n_embd);
  for (int64_t begin = 0; begin < n; begin += n_batch_) {
    decode_chunk(batch, begin, std::min(n, begin + n_batch_));
  }
}

const float* Context::logits(int64_t row) const {
  FULGUR_CHECK(row >= 0 && row < batch_rows_ && out_index_[row] >= 0, "batch row ", row,
               " has no logits (it was not flagged for output)");
  return logits_.data() + out_index_[row] * model_.n_vocab();
}

const float* Context::tap(int tap, int64_t row) const {
  FULGUR_CHECK(tap >= 0 && tap < static_cast<int>(taps_.size()) && row >= 0 && row < batch_rows_,
               "tap ", tap, " row ", row, " is out of range");
  return tap_data_.data() + (tap * batch_rows_ + row) * hp_.n_embd;
}

void Context::decode_chunk(const Batch& batch, int64_t begin, int64_t end) {
  const int64_t n = end - begin, E = hp_.n_embd;
  const ModelWeights& w = model_.weights();
  // [n][E] input rows.
  if (!batch.tokens.empty()) {
    kernels::get_rows(w.token_embd.type, w.token_embd.data, w.token_embd.row_stride,
                      w.token_embd.rows, E, batch.tokens.data() + begin, n, x_.data(), E);
  } else {
    std::memcpy(x_.data(), batch.embd.data() + begin * E, n * E * sizeof(float));
  }
  std::copy(batch.pos.begin() + begin, batch.pos.begin() + end, pos_.begin());
  std::copy(batch.seq.begin() + begin, batch.seq.begin() + end, seq_.begin());
  kv_.claim(n, pos_.data(), seq_.data(), cells_.data());
  group_by_sequence(n);
  kernels::rope_cache(hp_.rope, pos_.data(), n, rope_cs_.data());

  for (int64_t l = 0; l <= hp_.n_layer; ++l) {
    for (size_t t = 0; t < taps_.size(); ++t) {
      if (taps_[t] != l) continue;
      float* dst = tap_data_.data() + (t * batch_rows_ + begin) * E;
      std::memcpy(dst, x_.data(), n * E * sizeof(float));
    }
    if (l < hp_.n_layer) layer_forward(l, n);
  }

  // Final norm and logits for the flagged rows only, gathered contiguously in h_.
  int64_t n_out = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!batch.output[begin + i]) continue;
    kernels::rms_norm(x_.data() + i * E, w.output_norm.data, hp_.rms_eps, h_.data() + n_out * E, 1,
                      E, E, E);
    ++n_out;
  }
  if (n_out > 0) {
    int64_t first = -1;
    for (int64_t i = begin; i < end && first < 0; ++i) first = out_index_[i];
    mm(w.output, h_.data(), n_out, logits_.data() + first * model_.n_vocab(), pool_);
  }
}

void Context::group_by_sequence(int64_t n) {
  n_groups_ = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    while (g < n_groups_ && groups_[g].seq != seq_[i]) ++g;
    if (g == n_groups_) {
      if (static_cast<int64_t>(groups_.size()) == n_groups_) groups_.emplace_back();
      groups_[g].seq = seq_[i];
      groups_[g].rows.clear();
      groups_[g].row_pos.clear();
      groups_[g].row_seq.clear();
      ++n_groups_;
    }
    groups_[g].rows.push_back(static_cast<int32_t>(i));
    groups_[g].row_pos.push_back(pos_[i]);
    groups_[g].row_seq.push_back(seq_[i]);
  }
  for (int64_t g = 0; g < n_groups_; ++g) {
    SeqGroup& G = groups_[g];
    kv_.visible_cells(uint64_t{1} << G.seq, G.cells, G.cell_pos, G.cell_seq);
  }
}

void Context::attention(int64_t l) {
  const int64_t Dh = hp_.head_dim, H = hp_.n_head[l], q_width = H * Dh;
  kernels::AttentionArgs a;
  a.n_heads = H;
  a.n_kv_heads = hp_.n_head_kv[l];
  a.head_dim = Dh;
  a.k = kv_.k(l);
  a.v = kv_.v(l);
  a.n_ctx = kv_.n_ctx();
  a.mask = kernels::AttnMask::kCausal;
  a.q_row_stride = q_width;
  a.out_row_stride = q_width;
  for (int64_t g = 0; g < n_groups_; ++g) {
    const SeqGroup& G = groups_[g];
    const int64_t rows = static_cast<int64_t>(G.rows.size());
    // One sequence (the usual case) reads q and writes the output in place.
    const bool direct = n_groups_ == 1;
    if (!direct) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(q_gather_.data() + r * q_width, q_.data() + G.rows[r] * q_width, q_width * sizeof(float));
      }
    }
    a.q = direct ? q_.data() : q_gather_.data();
    a.out = direct ? attn_.data() : out_gather_.data();
    a.n_rows = rows;
    a.cells = G.cells.data();
    a.cell_pos = G.cell_pos.data();
    a.cell_seq = G.cell_seq.data();
    a.n_cells = static_cast<int64_t>(G.cells.size());
    a.row_pos = G.row_pos.data();
    a.row_seq = G.row_seq.data();
    kernels::attention(a, &pool_);
    if (!direct) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(attn_.data() + G.rows[r] * q_width, out_gather_.data() + r * q_width, q_width * sizeof(float));
      }
    }
  }
}

template <class Fn>
void Context::for_rows(int64_t n, Fn&& fn) {
  // A pool run costs a barrier: worth it only when there are rows to share (prefill, verify).
  constexpr int64_t kMinRowsPerThread = 4;
  if (n >= kMinRowsPerThread * pool_.size() && pool_.size() > 1)
    pool_.parallel_for(n, [&](int64_t r0, int64_t r1, int) { fn(r0, r1); });
  else
    fn(0, n);
}

void Context::layer_forward(int64_t l, int64_t n) {
  const LayerWeights& L = model_.weights().layers[l];
  const int64_t E = hp_.n_embd, Dh = hp_.head_dim, H = hp_.n_head[l], Hkv = hp_.n_head_kv[l];
  const int64_t q_width = H * Dh, kv_width = Hkv * Dh, F = hp_.n_ff[l];
  const float eps = hp_.rms_eps;

  // Attention block. h, q, k, v: [n][E], [n][H*Dh], [n][Hkv*Dh] x2.
  for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::rms_norm(x_.data() + r0 * E, L.attn_norm.data, eps, h_.data() + r0 * E, r1 - r0, E, E, E);
  });
  const kernels::MatmulOut qkv[] = {{&L.wq, q_.data(), q_width}, {&L.wk, k_.data(), kv_width},
                                     {&L.wv, v_.data(), kv_width}};
  kernels::matmul_many(qkv, 3, h_.data(), n, E, &pool_);

  // Per row: biases, QK norm, RoPE, and K and V into their cells: cache [Hkv][n_ctx][Dh] f16.
  const int64_t n_ctx = kv_.n_ctx(), n_rot = hp_.rope.n_rot;
  uint16_t* kc = kv_.k(l);
  uint16_t* vc = kv_.v(l);
  for_rows(n, [&](int64_t r0, int64_t r1) {
    float* q = q_.data() + r0 * q_width;
    float* k = k_.data() + r0 * kv_width;
    float* v = v_.data() + r0 * kv_width;
    const int64_t m = r1 - r0;
    if (hp_.qkv_bias) {
      add_bias(q, L.bq, m, q_width);
      add_bias(k, L.bk, m, kv_width);
      add_bias(v, L.bv, m, kv_width);
    }
    if (hp_.qk_norm) {  // per head, over Dh
      kernels::rms_norm(q, L.q_norm.data, eps, q, m * H, Dh, Dh, Dh);
      kernels::rms_norm(k, L.k_norm.data, eps, k, m * Hkv, Dh, Dh, Dh);
    }
    const float* cs = rope_cs_.data() + r0 * 2 * n_rot;
    kernels::rope_apply(q, m, H, Dh, q_width, n_rot, hp_.rope.mode, cs);
    kernels::rope_apply(k, m, Hkv, Dh, kv_width, n_rot, hp_.rope.mode, cs);
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t g = 0; g < Hkv; ++g) {
        kernels::to_f16(k_.data() + i * kv_width + g * Dh, kc + (g * n_ctx + cells_[i]) * Dh, Dh);
        kernels::to_f16(v_.data() + i * kv_width + g * Dh, vc + (g * n_ctx + cells_[i]) * Dh, Dh);
      }
    }
  });

  attention(l);

  // x += Wo · attn, then the FFN's normed input (h_ holds the projection, then the norm).
  mm(L.wo, attn_.data(), n, h_.data(), pool_);
  for_rows(n, [&](int64_t r0, int64_t r1) {
    float* x = x_.data() + r0 * E;
    float* h = h_.data() + r0 * E;
    kernels::add(x, h, x, (r1 - r0) * E);
    kernels::rms_norm(x, L.ffn_norm.data, eps, h, r1 - r0, E, E, E);
  });

  // FFN block: x += Wdown · (silu(Wgate h) ⊙ Wup h)
  const kernels::MatmulOut gate_up[] = {{&L.w_gate, gate_.data(), F}, {&L.w_up, up_.data(), F}};
  kernels::matmul_many(gate_up, 2, h_.data(), n, E, &pool_);
  for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::swiglu(gate_.data() + r0 * F, up_.data() + r0 * F, gate_.data() + r0 * F, (r1 - r0) * F);
  });
  mm(L.w_down, gate_.data(), n, h_.data(), pool_);
  for_rows(n, [&](int64_t r0, int64_t r1) {
    kernels::add(x_.data() + r0 * E, h_.data() + r0 * E, x_.data() + r0 * E, (r1 - r0) * E);
  });
}

}  // namespace fulgur
