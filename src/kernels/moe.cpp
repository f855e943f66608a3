#include "kernels/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/packed.h"

namespace fulgur::kernels {

bool expert_stack_packable(int64_t rows_per_expert) { return rows_per_expert % kPackRows == 0; }

WeightView expert_matrix(const WeightView& stack, int64_t n_expert, int64_t e) {
  FULGUR_CHECK(n_expert >= 1 && stack.rows % n_expert == 0, "expert_matrix: a stack of ",
               stack.rows, " rows does not hold ", n_expert, " experts of equal height");
  FULGUR_CHECK(e >= 0 && e < n_expert, "expert_matrix: expert ", e, " of ", n_expert);
  const int64_t rows = stack.rows / n_expert;
  WeightView w = stack;
  w.rows = rows;
  int64_t offset;  // bytes from the stack's start
  if (stack.layout == WeightLayout::kRows16) {
    FULGUR_CHECK(expert_stack_packable(rows), "expert_matrix: experts of ", rows,
                 " rows are not whole 16-row tiles; pack each expert's matrix on its own");
    offset = e * (rows / kPackRows) * static_cast<int64_t>(stack.row_stride);
  } else {
    offset = e * rows * static_cast<int64_t>(stack.row_stride);
  }
  w.data = static_cast<const uint8_t*>(stack.data) + offset;
  return w;
}

void moe_route(const MoeRouting& routing, const float* logits, int64_t n, int64_t ld,
               int32_t* ids, float* weights) {
  const int64_t ne = routing.n_expert, k = routing.n_used;
  FULGUR_CHECK(ne >= 1 && k >= 1 && k <= ne, "moe_route: ", k, " experts used of ", ne,
               "; expected 1 <= expert_used_count <= expert_count");
  FULGUR_CHECK(n == 0 || ld >= ne, "moe_route: logits row stride ", ld, " is below the ", ne,
               " experts");
  // [n_expert] f32 each: the gate probabilities and the selection values of one row.
  thread_local std::vector<float> buf;
  if (buf.size() < static_cast<size_t>(2 * ne)) buf.resize(static_cast<size_t>(2 * ne));
  float* p = buf.data();
  float* sel = p + ne;
  for (int64_t r = 0; r < n; ++r) {
    const float* lr = logits + r * ld;
    if (routing.gating == MoeGating::kSoftmax) {
      std::memcpy(p, lr, static_cast<size_t>(ne) * sizeof(float));
      softmax_ref(p, 1, ne, ne);
    } else if (routing.gating == MoeGating::kSoftmaxWeight) {
      std::memcpy(p, lr, static_cast<size_t>(ne) * sizeof(float));
    } else {
      for (int64_t e = 0; e < ne; ++e)
        p[e] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(lr[e]))));
    }
    for (int64_t e = 0; e < ne; ++e)
      sel[e] = routing.selection_bias != nullptr ? p[e] + routing.selection_bias[e] : p[e];
    // Top k by insertion into a list kept sorted best first: scanning the experts in id order
    // and displacing only strictly smaller values leaves equal values in id order, so the lower
    // id wins a tie. O(n_expert * k), a few hundred comparisons for 8 of 128.
    int32_t* id = ids + r * k;
    int64_t len = 0;
    for (int64_t e = 0; e < ne; ++e) {
      const float v = sel[e];
      if (len == k && !(v > sel[id[k - 1]])) continue;
      int64_t pos = len < k ? len : k - 1;  // the slot v takes, before shifting
      while (pos > 0 && v > sel[id[pos - 1]]) --pos;
      const int64_t last = len < k ? len : k - 1;
      for (int64_t i = last; i > pos; --i) id[i] = id[i - 1];
      id[pos] = static_cast<int32_t>(e);
      if (len < k) ++len;
    }
    float* w = weights + r * k;
    for (int64_t j = 0; j < k; ++j) w[j] = p[id[j]];
    if (routing.gating == MoeGating::kSoftmaxWeight) softmax_ref(w, 1, k, k);
    if (routing.normalize) {
      double sum = 0.0;
      for (int64_t j = 0; j < k; ++j) sum += w[j];
      // llama.cpp clamps the sum below at 2^-14 (the smallest normal f16) so that tiny
      // probabilities are not blown up to weights near 1 / k.
      const float div = std::max(static_cast<float>(sum), 6.103515625e-5f);
      for (int64_t j = 0; j < k; ++j) w[j] /= div;
    }
    if (routing.scale != 0.0f && routing.scale != 1.0f)
      for (int64_t j = 0; j < k; ++j) w[j] *= routing.scale;
  }
}

void ExpertRows::build(const int32_t* ids, int64_t n, int64_t k, int64_t n_expert) {
  FULGUR_CHECK(n >= 0 && k >= 1 && n_expert >= 1, "ExpertRows: ", n, " rows of ", k,
               " choices among ", n_expert, " experts");
  FULGUR_CHECK(n * k < std::numeric_limits<int32_t>::max(), "ExpertRows: ", n, " x ", k,
               " choices overflow the 32-bit row lists");
  n_expert_ = n_expert;
  k_ = k;
  const auto pairs = static_cast<size_t>(n * k);
  if (offsets_.size() < static_cast<size_t>(n_expert + 1)) offsets_.resize(static_cast<size_t>(n_expert + 1));
  if (rows_.size() < pairs) {
    rows_.resize(pairs);
    slots_.resize(pairs);
  }
  // Count into offsets_[e + 1], prefix-sum, then place each pair at its expert's next free
  // index (offsets_[e] runs ahead while placing, and ends at the next expert's start).
  std::fill(offsets_.begin(), offsets_.begin() + n_expert + 1, 0);
  for (int64_t i = 0; i < n * k; ++i) {
    const int32_t e = ids[i];
    FULGUR_CHECK(e >= 0 && e < n_expert, "ExpertRows: row ", i / k, " slot ", i % k,
                 " chooses expert ", e, ", outside the ", n_expert, " experts");
    ++offsets_[static_cast<size_t>(e) + 1];
  }
  n_active_ = 0;
  for (int64_t e = 0; e < n_expert; ++e) {
    n_active_ += offsets_[e + 1] > 0;
    offsets_[e + 1] += offsets_[e];
  }
  for (int64_t i = 0; i < n * k; ++i) {
    const int32_t at = offsets_[ids[i]]++;
    rows_[at] = static_cast<int32_t>(i / k);
    slots_[i] = at;
  }
  // Each offsets_[e] now holds expert e's end, the start of e + 1: shift back.
  for (int64_t e = n_expert; e > 0; --e) offsets_[e] = offsets_[e - 1];
  offsets_[0] = 0;
}

}  // namespace fulgur::kernels
