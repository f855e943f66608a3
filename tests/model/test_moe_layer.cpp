// The MoE feed-forward kind (layers.h moe_ffn) on its own, over f32 weights made here, against a
// scalar reference in double, in every combination a model may ask for: softmax or sigmoid
// routing, with or without a selection bias, renormalised or not, scaled; SwiGLU or ReLU²
// experts, on h or on a latent projection of it; and no shared expert, a plain one or one scaled
// per row by sigmoid(gate_inp_shexp · h) (Qwen3-Next's), of either activation. Each row's result
// is also the same bits whether it runs alone or in the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "core/thread_pool.h"
#include "model/layers/layers.h"

namespace fulgur {
namespace {

constexpr int64_t kE = 40, kExperts = 8, kUsed = 3, kF = 24, kLatent = 20, kShared = 28, kRows = 7;

struct Matrix {
  std::vector<float> data;  // [rows][cols]
  int64_t rows = 0, cols = 0;
  kernels::WeightView view() const {
    kernels::WeightView w;
    w.type = DType::kF32;
    w.data = data.data();
    w.rows = rows;
    w.cols = cols;
    w.row_stride = static_cast<size_t>(cols) * sizeof(float);
    return w;
  }
};

Matrix random_matrix(int64_t rows, int64_t cols, std::mt19937& rng, float scale) {
  std::normal_distribution<float> n(0.0f, scale);
  Matrix m{std::vector<float>(static_cast<size_t>(rows * cols)), rows, cols};
  for (float& x : m.data) x = n(rng);
  return m;
}

// y = W x (rows [r0, r0 + n) of W).
std::vector<double> mul(const Matrix& w, const std::vector<double>& x, int64_t r0 = 0, int64_t n = -1) {
  if (n < 0) n = w.rows;
  std::vector<double> y(static_cast<size_t>(n), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < w.cols; ++c) y[r] += static_cast<double>(w.data[(r0 + r) * w.cols + c]) * x[c];
  }
  return y;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// act(gate, up) rows of expert e (or of a dense pair when e < 0), then down.
std::vector<double> ref_ffn(FfnAct act, const Matrix* gate, const Matrix& up, const Matrix& down,
                            const std::vector<double>& x, int64_t F, int64_t e) {
  const int64_t r0 = e < 0 ? 0 : e * F, out = e < 0 ? down.rows : down.rows / kExperts;
  const std::vector<double> u = mul(up, x, r0, F);
  std::vector<double> a(static_cast<size_t>(F));
  if (act == FfnAct::kSwiGlu) {
    const std::vector<double> g = mul(*gate, x, r0, F);
    for (int64_t c = 0; c < F; ++c) a[c] = g[c] * sigmoid(g[c]) * u[c];
  } else {
    for (int64_t c = 0; c < F; ++c) a[c] = u[c] > 0 ? u[c] * u[c] : 0.0;
  }
  return mul(down, a, e < 0 ? 0 : e * out, out);
}

struct Case {
  const char* name;
  MoeDesc d;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MoeLayer : public ::testing::TestWithParam<Case> {};

TEST_P(MoeLayer, MatchesAScalarReferenceAndIsTheSameAloneOrBatched) {
  MoeDesc d = GetParam().d;
  d.n_expert = kExperts;
  d.n_expert_used = kUsed;
  d.n_ff_exp = kF;
  const int64_t X = d.expert_io(kE);
  std::mt19937 rng(5);
  const Matrix router = random_matrix(kExperts, kE, rng, 0.4f);
  std::vector<float> bias(kExperts);
  for (int64_t e = 0; e < kExperts; ++e) bias[e] = 0.05f * static_cast<float>((e * 5) % kExperts) - 0.1f;
  const Matrix gate_exps = random_matrix(kExperts * kF, X, rng, 0.3f), up_exps = random_matrix(kExperts * kF, X, rng, 0.3f);
  const Matrix down_exps = random_matrix(kExperts * X, kF, rng, 0.3f);
  const Matrix latent_down = random_matrix(kLatent, kE, rng, 0.3f), latent_up = random_matrix(kE, kLatent, rng, 0.3f);
  const Matrix sh_gate = random_matrix(kShared, kE, rng, 0.3f), sh_up = random_matrix(kShared, kE, rng, 0.3f);
  const Matrix sh_down = random_matrix(kE, kShared, rng, 0.3f);
  const Matrix sh_gate_inp = random_matrix(1, kE, rng, 0.5f);

  MoeWeights w;
  w.router = router.view();
  if (d.selection_bias) w.selection_bias = {bias.data(), kExperts};
  if (d.expert_act == FfnAct::kSwiGlu) w.gate_exps = gate_exps.view();
  w.up_exps = up_exps.view();
  w.down_exps = down_exps.view();
  if (d.latent > 0) {
    w.latent_down = latent_down.view();
    w.latent_up = latent_up.view();
  }
  if (d.n_ff_shared > 0) {
    if (d.shared_act == FfnAct::kSwiGlu) w.shared.gate = sh_gate.view();
    w.shared.up = sh_up.view();
    w.shared.down = sh_down.view();
  }
  if (d.shared_gate) w.shared_gate = {sh_gate_inp.data.data(), kE};

  ModelDesc desc;
  desc.n_embd = kE;
  LayerDesc layer;
  layer.ffn = FfnKind::kMoe;
  layer.moe = d;
  desc.layers = {layer};
  LayerScratch scratch(desc, kRows);
  ThreadPool pool(2);
  const auto run = [&](const float* h, int64_t n, float* out) {
    ForwardPass p;
    p.desc = &desc;
    p.n = n;
    p.s = &scratch;
    p.pool = &pool;
    moe_ffn(p, d, w, h, nullptr, out);
  };
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> h(static_cast<size_t>(kRows * kE)), out(h.size()), alone(static_cast<size_t>(kE));
  for (float& v : h) v = nd(rng);
  run(h.data(), kRows, out.data());

  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<double> x(h.begin() + r * kE, h.begin() + (r + 1) * kE);
    // Routing: probabilities, the choice on probability + bias (ties to the lower id), weights.
    std::vector<double> prob = mul(router, x);
    if (d.gating == kernels::MoeGating::kSigmoid) {
      for (double& v : prob) v = sigmoid(v);
    } else {
      const double top = *std::max_element(prob.begin(), prob.end());
      double z = 0;
      for (double& v : prob) z += v = std::exp(v - top);
      for (double& v : prob) v /= z;
    }
    std::vector<int> ids(kExperts);
    std::iota(ids.begin(), ids.end(), 0);
    const auto sel = [&](int e) { return prob[e] + (d.selection_bias ? bias[e] : 0.0); };
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return sel(a) > sel(b); });
    double sum = 0;
    for (int j = 0; j < kUsed; ++j) sum += prob[ids[j]];
    const std::vector<double> u = d.latent > 0 ? mul(latent_down, x) : x;
    std::vector<double> routed(static_cast<size_t>(X), 0.0);
    for (int j = 0; j < kUsed; ++j) {
      double wj = prob[ids[j]];
      if (d.norm_weights) wj /= std::max(sum, 6.103515625e-5);
      wj *= d.weights_scale;
      const std::vector<double> y = ref_ffn(d.expert_act, &gate_exps, up_exps, down_exps, u, kF, ids[j]);
      for (int64_t c = 0; c < X; ++c) routed[c] += wj * y[c];
    }
    std::vector<double> want = d.latent > 0 ? mul(latent_up, routed) : routed;
    if (d.n_ff_shared > 0) {
      const std::vector<double> s = ref_ffn(d.shared_act, &sh_gate, sh_up, sh_down, x, kShared, -1);
      const double g = d.shared_gate ? sigmoid(mul(sh_gate_inp, x)[0]) : 1.0;
      for (int64_t c = 0; c < kE; ++c) want[c] += g * s[c];
    }
    double scale = 0, worst = 0;
    for (int64_t c = 0; c < kE; ++c) {
      scale = std::max(scale, std::fabs(want[c]));
      worst = std::max(worst, std::fabs(want[c] - out[r * kE + c]));
    }
    EXPECT_LT(worst, 2e-5 * scale) << "row " << r;
    run(h.data() + r * kE, 1, alone.data());
    EXPECT_EQ(std::memcmp(alone.data(), out.data() + r * kE, kE * sizeof(float)), 0) << "row " << r << " alone";
  }
}

MoeDesc moe(FfnAct act, kernels::MoeGating gating, bool bias, bool norm, float scale, int64_t latent, int64_t shared,
            FfnAct shared_act, bool shared_gate) {
  MoeDesc d;
  d.expert_act = act;
  d.gating = gating;
  d.selection_bias = bias;
  d.norm_weights = norm;
  d.weights_scale = scale;
  d.latent = latent;
  d.n_ff_shared = shared;
  d.shared_act = shared_act;
  d.shared_gate = shared_gate;
  return d;
}

using G = kernels::MoeGating;
INSTANTIATE_TEST_SUITE_P(
    Kinds, MoeLayer,
    ::testing::Values(
        Case{"qwen3moe", moe(FfnAct::kSwiGlu, G::kSoftmax, false, true, 1.0f, 0, 0, FfnAct::kSwiGlu, false)},
        Case{"qwen3next", moe(FfnAct::kSwiGlu, G::kSoftmax, false, true, 1.0f, 0, kShared, FfnAct::kSwiGlu, true)},
        Case{"nemotron", moe(FfnAct::kRelu2, G::kSigmoid, true, true, 2.5f, 0, kShared, FfnAct::kRelu2, false)},
        Case{"nemotron_latent", moe(FfnAct::kRelu2, G::kSigmoid, true, true, 2.5f, kLatent, kShared, FfnAct::kRelu2, false)},
        Case{"sigmoid_unnormalised_relu2_gated_shared",
             moe(FfnAct::kRelu2, G::kSigmoid, false, false, 1.5f, kLatent, kShared, FfnAct::kRelu2, true)}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fulgur
