// The MoE router (moe_route) against hand-computed cases: softmax and sigmoid gating, the
// selection bias used for choosing only, renormalization with llama.cpp's clamp, scaling, the
// tie rule (the lower expert id wins), against a sort-based top-k over many random rows with
// forced ties; and the grouping of rows by expert (ExpertRows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/moe.h"

namespace fulgur::kernels {
namespace {

struct Routed {
  std::vector<int32_t> ids;   // [n][k]
  std::vector<float> weights;  // [n][k]
};

Routed route(const MoeRouting& r, const std::vector<float>& logits, int64_t n) {
  Routed out{std::vector<int32_t>(static_cast<size_t>(n * r.n_used), -1),
             std::vector<float>(static_cast<size_t>(n * r.n_used), -1.0f)};
  moe_route(r, logits.data(), n, r.n_expert, out.ids.data(), out.weights.data());
  return out;
}

TEST(MoeRoute, SoftmaxTopK) {
  // softmax([1, 3, 2, 0]) = e^x / (e + e^3 + e^2 + 1): e^3 / 31.19287 = 0.6439143,
  // e^2 / 31.19287 = 0.2368828.
  MoeRouting r{.n_expert = 4, .n_used = 2};
  const Routed a = route(r, {1, 3, 2, 0}, 1);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(a.weights[0], 0.6439143, 1e-6);
  EXPECT_NEAR(a.weights[1], 0.2368828, 1e-6);
  // Renormalized: e^3 / (e^3 + e^2) = 1 / (1 + e^-1) = 0.7310586, and 0.2689414.
  r.normalize = true;
  const Routed b = route(r, {1, 3, 2, 0}, 1);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(b.weights[0], 0.7310586, 1e-6);
  EXPECT_NEAR(b.weights[1], 0.2689414, 1e-6);
  // Every expert used: all of them, best first, and the weights sum to 1.
  r.n_used = 4;
  const Routed c = route(r, {1, 3, 2, 0}, 1);
  EXPECT_EQ(c.ids, (std::vector<int32_t>{1, 2, 0, 3}));
  EXPECT_NEAR(c.weights[0] + c.weights[1] + c.weights[2] + c.weights[3], 1.0, 1e-6);
}

TEST(MoeRoute, TiesGoToTheLowerExpertId) {
  MoeRouting r{.n_expert = 5, .n_used = 2};
  EXPECT_EQ(route(r, {2, 5, 5, 1, 5}, 1).ids, (std::vector<int32_t>{1, 2}));
  r.n_used = 3;
  EXPECT_EQ(route(r, {2, 5, 5, 1, 5}, 1).ids, (std::vector<int32_t>{1, 2, 4}));
  r.n_used = 4;
  EXPECT_EQ(route(r, {5, 1, 2, 2, 5}, 1).ids, (std::vector<int32_t>{0, 4, 2, 3}));
  // All equal: the first k, each 1/5 of the mass, and 1/k once renormalized.
  r.n_used = 2;
  r.normalize = true;
  const Routed eq = route(r, {0, 0, 0, 0, 0}, 1);
  EXPECT_EQ(eq.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_FLOAT_EQ(eq.weights[0], 0.5f);
  EXPECT_FLOAT_EQ(eq.weights[1], 0.5f);
}

// gpt-oss (expert_gating_func 3): the k largest logits, weighted by the softmax over them alone.
TEST(MoeRoute, SoftmaxOverTheChosenLogits) {
  MoeRouting r{.n_expert = 5, .n_used = 2, .gating = MoeGating::kSoftmaxWeight};
  // Chosen 1 (logit 3) and 4 (logit 2): weights 1 / (1 + e^-1) = 0.7310586 and 0.2689414,
  // whatever the other logits are (a softmax over all five would give 0.6285 and 0.2312).
  const Routed a = route(r, {1, 3, 0.5f, -4, 2}, 1);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{1, 4}));
  EXPECT_NEAR(a.weights[0], 0.7310586, 1e-6);
  EXPECT_NEAR(a.weights[1], 0.2689414, 1e-6);
  // Negative logits choose by value, not magnitude; a tie goes to the lower id.
  const Routed b = route(r, {-1, -3, -1, -2, -5}, 1);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{0, 2}));
  EXPECT_FLOAT_EQ(b.weights[0], 0.5f);
  EXPECT_FLOAT_EQ(b.weights[1], 0.5f);
}

TEST(MoeRoute, SelectionBiasChoosesButDoesNotWeigh) {
  // Equal logits: p = 1/3 each; the bias alone orders the choice (2, then 1), the weights stay p.
  const float bias[] = {0.0f, 0.1f, 0.2f};
  MoeRouting r{.n_expert = 3, .n_used = 2, .selection_bias = bias};
  const Routed a = route(r, {0, 0, 0}, 1);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{2, 1}));
  EXPECT_NEAR(a.weights[0], 1.0 / 3, 1e-7);
  EXPECT_NEAR(a.weights[1], 1.0 / 3, 1e-7);
}

TEST(MoeRoute, SigmoidBiasNormalizeScale) {
  // sigmoid([0, ln 3, -ln 3]) = [0.5, 0.75, 0.25]; + bias [0.3, 0, 0.6] = [0.8, 0.75, 0.85]:
  // choose 2, then 0; weights p = [0.25, 0.5]; normalized [1/3, 2/3]; times 2.5.
  const float bias[] = {0.3f, 0.0f, 0.6f};
  const float l3 = std::log(3.0f);
  MoeRouting r{.n_expert = 3, .n_used = 2, .gating = MoeGating::kSigmoid, .selection_bias = bias};
  const Routed a = route(r, {0, l3, -l3}, 1);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{2, 0}));
  EXPECT_NEAR(a.weights[0], 0.25, 1e-7);
  EXPECT_NEAR(a.weights[1], 0.5, 1e-7);
  r.normalize = true;
  r.scale = 2.5f;
  const Routed b = route(r, {0, l3, -l3}, 1);
  EXPECT_NEAR(b.weights[0], 2.5 / 3, 1e-6);
  EXPECT_NEAR(b.weights[1], 5.0 / 3, 1e-6);
  // A scale of 0 means "none", as llama.cpp reads an absent expert_weights_scale.
  r.scale = 0.0f;
  const Routed c = route(r, {0, l3, -l3}, 1);
  EXPECT_NEAR(c.weights[0], 1.0 / 3, 1e-7);
  EXPECT_NEAR(c.weights[1], 2.0 / 3, 1e-7);
}

TEST(MoeRoute, RenormalizationClampsTheSum) {
  // sigmoid(-20) + sigmoid(-21) = 2.8e-9, far below the clamp 6.103515625e-5 (2^-14): the
  // weights are divided by the clamp, not blown up to sum 1.
  MoeRouting r{.n_expert = 2, .n_used = 2, .gating = MoeGating::kSigmoid, .normalize = true};
  const Routed a = route(r, {-20, -21}, 1);
  const auto p = [](double x) { return static_cast<float>(1.0 / (1.0 + std::exp(-x))); };
  EXPECT_EQ(a.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(a.weights[0], p(-20) / 6.103515625e-5f);
  EXPECT_EQ(a.weights[1], p(-21) / 6.103515625e-5f);
  EXPECT_LT(a.weights[0] + a.weights[1], 1e-4f);
}

// 128 experts, 8 used, many rows with logits on a coarse grid (many ties): the ids are the
// first k of the experts sorted by (value descending, id ascending), and each row routed with
// the others is bit for bit the row routed alone.
TEST(MoeRoute, MatchesSortedTopKAndIsBatchInvariant) {
  const int64_t ne = 128, k = 8, n = 200;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> grid(-6, 6);
  std::vector<float> logits(static_cast<size_t>(n * ne)), bias(static_cast<size_t>(ne));
  for (float& v : logits) v = 0.5f * static_cast<float>(grid(rng));
  for (float& v : bias) v = 0.01f * static_cast<float>(grid(rng) % 2);
  for (MoeGating g : {MoeGating::kSoftmax, MoeGating::kSigmoid})
    for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
      MoeRouting r{.n_expert = ne, .n_used = k, .gating = g, .selection_bias = b, .normalize = true};
      const Routed all = route(r, logits, n);
      for (int64_t row = 0; row < n; ++row) {
        const std::vector<float> one(logits.begin() + row * ne, logits.begin() + (row + 1) * ne);
        // The selection values recomputed as the router defines them (softmax in double).
        std::vector<float> sel(one);
        if (g == MoeGating::kSigmoid)
          for (float& v : sel) v = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
        else {
          double mx = -INFINITY, sum = 0;
          for (float v : sel) mx = std::max<double>(mx, v);
          for (float v : sel) sum += std::exp(v - mx);
          for (float& v : sel) v = static_cast<float>(std::exp(v - mx) / sum);
        }
        if (b != nullptr)
          for (int64_t e = 0; e < ne; ++e) sel[static_cast<size_t>(e)] += b[e];
        std::vector<int32_t> order(static_cast<size_t>(ne));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t x, int32_t y) { return sel[static_cast<size_t>(x)] > sel[static_cast<size_t>(y)]; });
        const Routed alone = route(r, one, 1);
        for (int64_t j = 0; j < k; ++j)
          ASSERT_EQ(alone.ids[static_cast<size_t>(j)], order[static_cast<size_t>(j)]) << "row " << row << " slot " << j;
        ASSERT_TRUE(std::equal(alone.ids.begin(), alone.ids.end(), all.ids.begin() + row * k)) << "row " << row;
        ASSERT_EQ(0, std::memcmp(alone.weights.data(), all.weights.data() + row * k, k * sizeof(float))) << "row " << row;
      }
    }
}

TEST(MoeRoute, RejectsBadCounts) {
  std::vector<float> logits(8, 0.0f);
  std::vector<int32_t> ids(8);
  std::vector<float> w(8);
  MoeRouting r{.n_expert = 4, .n_used = 5};  // more used than exist
  EXPECT_THROW(moe_route(r, logits.data(), 1, 4, ids.data(), w.data()), Error);
  r.n_used = 0;
  EXPECT_THROW(moe_route(r, logits.data(), 1, 4, ids.data(), w.data()), Error);
  r.n_used = 2;
  EXPECT_THROW(moe_route(r, logits.data(), 1, 3, ids.data(), w.data()), Error);  // ld < n_expert
  EXPECT_NO_THROW(moe_route(r, logits.data(), 2, 4, ids.data(), w.data()));
}

// ---- ExpertRows --------------------------------------------------------------------------------

TEST(ExpertRows, GroupsPairsByExpert) {
  // Rows 0, 1, 2 choose {2, 0}, {0, 1}, {2, 1} of 4 experts; expert 3 gets none.
  const int32_t ids[] = {2, 0, 0, 1, 2, 1};
  ExpertRows er;
  er.build(ids, 3, 2, 4);
  EXPECT_EQ(er.n_active(), 3);
  const int64_t counts[] = {2, 2, 2, 0}, offsets[] = {0, 2, 4, 6};
  const std::vector<int32_t> rows[] = {{0, 1}, {1, 2}, {0, 2}, {}};
  for (int64_t e = 0; e < 4; ++e) {
    EXPECT_EQ(er.count(e), counts[e]) << e;
    EXPECT_EQ(er.offset(e), offsets[e]) << e;
    EXPECT_EQ(std::vector<int32_t>(er.rows(e), er.rows(e) + er.count(e)), rows[e]) << e;
  }
  // Row 0's first choice (expert 2) is the first pair of expert 2's block, at 4; and so on.
  const int32_t slots[] = {4, 0, 1, 2, 5, 3};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(er.slot(i / 2, i % 2), slots[i]) << i;
}

TEST(ExpertRows, RandomBatchesAndNoReallocation) {
  std::mt19937 rng(9);
  const int64_t ne = 128, k = 8;
  ExpertRows er;
  const int32_t* first = nullptr;
  for (int64_t n : {512, 1, 8, 300}) {
    std::vector<int32_t> ids(static_cast<size_t>(n * k));
    for (int64_t r = 0; r < n; ++r) {
      std::vector<int32_t> all(static_cast<size_t>(ne));
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      std::copy(all.begin(), all.begin() + k, ids.begin() + r * k);
    }
    er.build(ids.data(), n, k, ne);
    if (first == nullptr) first = er.rows(0);
    EXPECT_EQ(er.rows(0), first) << "rebuilding a smaller batch reallocated";
    int64_t total = 0, active = 0;
    for (int64_t e = 0; e < ne; ++e) {
      total += er.count(e);
      active += er.count(e) > 0;
      for (int64_t i = 1; i < er.count(e); ++i) EXPECT_LT(er.rows(e)[i - 1], er.rows(e)[i]);
    }
    EXPECT_EQ(total, n * k);
    EXPECT_EQ(active, er.n_active());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = ids[static_cast<size_t>(r * k + j)], s = er.slot(r, j);
        ASSERT_GE(s, er.offset(e));
        ASSERT_LT(s, er.offset(e) + er.count(e));
        ASSERT_EQ(er.rows(e)[s - er.offset(e)], r);
      }
  }
  const int32_t bad[] = {0, 128};
  EXPECT_THROW(er.build(bad, 1, 2, 128), Error);
}

}  // namespace
}  // namespace fulgur::kernels
