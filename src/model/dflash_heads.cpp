#include "model/dflash_heads.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/archs/dflash.h"
#include "model/weights.h"

namespace fulgur {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// One row of a lookup table (any computable type) as f32: out [cols].
void table_row(const kernels::WeightView& t, int32_t id, float* out) {
  kernels::get_rows(t.type, t.data, t.row_stride, t.rows, t.cols, &id, 1, out, t.cols);
  if (t.scale != 1.0f) {
    for (int64_t i = 0; i < t.cols; ++i) out[i] *= t.scale;
  }
}

}  // namespace

DflashHeads::DflashHeads(const Model& model, ThreadPool& pool)
    : hp_(*model.dflash()), w_(model.weights().dflash_heads), n_embd_(model.n_embd()), pool_(pool) {
  const int64_t r = hp_.markov_rank, E = n_embd_;
  m_.resize(std::max<int64_t>(r, 1));
  z_.resize(E + 2 * r);
  act_.resize(std::max<int64_t>(3 * r, 1));
  state_.resize(std::max<int64_t>(r, 1));
  beta_.resize(hp_.n_vocab_draft);
  if (hp_.kind == DflashKind::kDflash2) {
    gate_.resize(hp_.selector_rank);
    pred_.resize(hp_.selector_rank);
    succ_.resize(hp_.selector_top_k * hp_.selector_rank);
    order_.resize(hp_.n_vocab);
  }
}

void DflashHeads::begin_block() { std::fill(state_.begin(), state_.end(), 0.0f); }

void DflashHeads::markov_row(int32_t prev) { table_row(w_.markov_w1, prev, m_.data()); }

float DflashHeads::confidence(const float* h, int32_t prev) {
  const DflashHeadWeights& w = w_;
  const int64_t E = n_embd_, r = hp_.markov_rank;
  std::copy(h, h + E, z_.begin());
  if (hp_.conf_with_markov) {
    markov_row(prev);
    std::copy(m_.begin(), m_.begin() + r, z_.begin() + E);
  }
  float logit = 0.0f;
  kernels::matmul(w.conf_proj, z_.data(), 1, w.conf_proj.cols, &logit, 1, nullptr);
  return sigmoid(logit + w.conf_bias);
}

void DflashHeads::add_markov_bias(const float* h, int32_t prev, float* logits) {
  if (hp_.markov == MarkovHead::kNone) return;
  const DflashHeadWeights& w = w_;
  const int64_t E = n_embd_, r = hp_.markov_rank;
  markov_row(prev);
  float* mix = m_.data();  // [r] what W2 multiplies
  if (hp_.markov == MarkovHead::kGated) {
    // z = [h ; m] (hidden first), g = σ(G z + b), mix = g ⊙ m
    std::copy(h, h + E, z_.begin());
    std::copy(m_.begin(), m_.begin() + r, z_.begin() + E);
    kernels::matmul(w.markov_gate, z_.data(), 1, E + r, act_.data(), r, nullptr);
    for (int64_t i = 0; i < r; ++i) m_[i] *= sigmoid(act_[i] + w.markov_gate_b[i]);
  } else if (hp_.markov == MarkovHead::kRnn) {
    // z = [s ; m ; h], [γg ; γc ; γo] = J z + b
    std::copy(state_.begin(), state_.begin() + r, z_.begin());
    std::copy(m_.begin(), m_.begin() + r, z_.begin() + r);
    std::copy(h, h + E, z_.begin() + 2 * r);
    kernels::matmul(w.markov_joint, z_.data(), 1, 2 * r + E, act_.data(), 3 * r, nullptr);
    for (int64_t i = 0; i < r; ++i) {
      const float gg = sigmoid(act_[i] + w.markov_joint_b[i]);
      const float gc = std::tanh(act_[r + i] + w.markov_joint_b[r + i]);
      const float go = std::tanh(act_[2 * r + i] + w.markov_joint_b[2 * r + i]);
      state_[i] = gg * state_[i] + (1.0f - gg) * gc;
      m_[i] = go;
    }
  }
  kernels::matmul(w.markov_w2, mix, 1, r, beta_.data(), hp_.n_vocab_draft, &pool_);
  kernels::add(logits, beta_.data(), logits, hp_.n_vocab_draft);
}

void DflashHeads::select(const float* h, const float* logits, int32_t prev, int32_t* ids,
                         float* scores) {
  const DflashHeadWeights& w = w_;
  const int64_t k = hp_.selector_top_k, R = hp_.selector_rank;
  std::iota(order_.begin(), order_.end(), 0);
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  kernels::matmul(w.sel_hidden, h, 1, n_embd_, gate_.data(), R, nullptr);
  table_row(w.sel_pred, prev, pred_.data());
  for (int64_t i = 0; i < R; ++i) pred_[i] *= gate_[i];
  std::copy(order_.begin(), order_.begin() + k, ids);
  kernels::get_rows(w.sel_succ.type, w.sel_succ.data, w.sel_succ.row_stride, w.sel_succ.rows, R,
                    ids, k, succ_.data(), R);
  for (int64_t c = 0; c < k; ++c) {
    double dot = 0.0;
    for (int64_t i = 0; i < R; ++i) dot += static_cast<double>(pred_[i]) * succ_[c * R + i];
    scores[c] = logits[ids[c]] + static_cast<float>(dot * w.sel_succ.scale);
  }
}

}  // namespace fulgur
