// Mixture-of-experts targets (qwen3moe): the MoE layer against a scalar reference written here
// from the GGUF tensors, on a model whose layers differ in expert count, experts used and expert
// width; batched decode bitwise equal to token by token; bad files refused naming the key or
// tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "model_fixture.h"
#include "reference_model.h"

namespace fulgur {
namespace {

using testing_support::expect_load_error;
using testing_support::RefModel;
using testing_support::Rows;
using testing_support::ref_attention;
using testing_support::rms_norm;
using testing_support::tiny_model;

const std::vector<int32_t>& kPrompt = testing_support::kHelloPrompt;

// Per-layer variant of the tiny qwen3moe (16 experts of width 128, 4 used): layer l keeps the
// first n_expert[l] experts, the first n_ff[l] rows of each (columns of down), and routes to
// n_used[l]; the expert keys become per-layer arrays. Shapes and keys can also be broken on
// purpose for the bad-input tests through `edit`.
struct PerLayer {
  std::vector<int32_t> n_expert = {16, 6}, n_used = {4, 3}, n_ff = {128, 96};
};

std::string per_layer_model(const std::string& name, const PerLayer& p,
                            const std::function<void(GgufWriter&)>& edit = {}) {
  const GgufReader src(tiny_model("qwen3moe"));
  GgufWriter w;
  w.copy_metadata(src);
  w.set_array("qwen3moe.expert_count", p.n_expert);
  w.set_array("qwen3moe.expert_used_count", p.n_used);
  w.set_array("qwen3moe.expert_feed_forward_length", p.n_ff);
  for (const GgufTensorInfo& t : src.tensors()) {
    const float* data = reinterpret_cast<const float*>(t.data);
    const int l = t.name.starts_with("blk.") ? std::stoi(t.name.substr(4)) : -1;
    const bool gate_up = t.name.ends_with("ffn_gate_exps.weight") || t.name.ends_with("ffn_up_exps.weight");
    if (t.name.ends_with("ffn_gate_inp.weight")) {  // {E, N} -> {E, n_expert}
      w.add_tensor(t.name, DType::kF32, {t.ne[0], p.n_expert[l]}, data, t.ne[0] * p.n_expert[l] * 4);
    } else if (gate_up || t.name.ends_with("ffn_down_exps.weight")) {
      // gate/up {E, F, N}: rows of each expert; down {F, E, N}: columns of each row.
      const int64_t cols = gate_up ? t.ne[0] : p.n_ff[l], rows = gate_up ? p.n_ff[l] : t.ne[1];
      std::vector<float> out;
      for (int64_t e = 0; e < p.n_expert[l]; ++e) {
        for (int64_t r = 0; r < rows; ++r) {
          const float* row = data + (e * t.ne[1] + r) * t.ne[0];
          out.insert(out.end(), row, row + cols);
        }
      }
      w.add_tensor(t.name, DType::kF32, {cols, rows, p.n_expert[l]}, out.data(), out.size() * 4);
    } else {
      w.add_tensor(t.name, t.type, t.shape(), t.data, t.nbytes);
    }
  }
  if (edit) edit(w);
  const std::string path = ::testing::TempDir() + "/fulgur_moe_" + name + ".gguf";
  w.write(path);
  return path;
}

// ---- the scalar reference of one qwen3moe layer, in double, from the file's f32 tensors ----

// Layer l over rows x [n][E] at positions 0..n-1 of one sequence: x + attention, then + MoE.
Rows reference_layer(const RefModel& m, const ModelDesc& d, int l, Rows x) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const LayerDesc& L = d.layers[l];
  const int64_t E = d.n_embd, n = static_cast<int64_t>(x.size());
  const double eps = d.rms_eps;
  const std::vector<double> an = m.vec(p + "attn_norm.weight"), fn = m.vec(p + "ffn_norm.weight");
  Rows h;
  for (const std::vector<double>& row : x) h.push_back(rms_norm(row.data(), E, an.data(), eps));
  const Rows o = ref_attention(m, p, d, L.attn, h);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < E; ++c) x[i][c] += o[i][c];

    // MoE: softmax over the router, top-k (ties to the lower id), renormalised weights.
    const MoeDesc& e = L.moe;
    const std::vector<double> hf = rms_norm(x[i].data(), E, fn.data(), eps);
    std::vector<double> pr = m.mul(p + "ffn_gate_inp.weight", hf);
    const double top = *std::max_element(pr.begin(), pr.end());
    double z = 0;
    for (double& t : pr) z += t = std::exp(t - top);
    for (double& t : pr) t /= z;
    std::vector<int> ids(e.n_expert);
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return pr[a] > pr[b]; });
    double wsum = 0;
    for (int j = 0; j < e.n_expert_used; ++j) wsum += pr[ids[j]];
    for (int j = 0; j < e.n_expert_used; ++j) {
      const int ex = ids[j];
      const int64_t F = e.n_ff_exp;
      const std::vector<double> g = m.mul(p + "ffn_gate_exps.weight", hf, ex * F, F);
      const std::vector<double> u = m.mul(p + "ffn_up_exps.weight", hf, ex * F, F);
      std::vector<double> a(F);
      for (int64_t c = 0; c < F; ++c) a[c] = g[c] / (1 + std::exp(-g[c])) * u[c];
      const std::vector<double> dn = m.mul(p + "ffn_down_exps.weight", a, ex * E, E);
      for (int64_t c = 0; c < E; ++c) x[i][c] += pr[ex] / wsum * dn[c];
    }
  }
  return x;
}

TEST(Moe, PerLayerExpertsMatchAScalarReferenceLayerByLayer) {
  const std::string path = per_layer_model("perlayer", PerLayer{});
  Model m(path);
  const ModelDesc& d = m.desc();
  ASSERT_EQ(d.n_layer(), 2);
  EXPECT_EQ(d.layers[0].moe.n_expert, 16);
  EXPECT_EQ(d.layers[1].moe.n_expert, 6);
  EXPECT_EQ(d.layers[1].moe.n_expert_used, 3);
  EXPECT_EQ(d.layers[1].moe.n_ff_exp, 96);
  Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
  ctx.set_taps({0, 1, 2});
  Batch b;
  for (size_t i = 0; i < kPrompt.size(); ++i) b.add(kPrompt[i], static_cast<int32_t>(i), 0, true);
  ctx.decode(b);
  const RefModel ref(path);
  for (int l = 0; l < 2; ++l) {
    std::vector<std::vector<double>> in;
    for (int64_t r = 0; r < b.size(); ++r) in.emplace_back(ctx.tap(l, r), ctx.tap(l, r) + d.n_embd);
    const std::vector<std::vector<double>> want = reference_layer(ref, d, l, in);
    for (int64_t r = 0; r < b.size(); ++r) {
      double scale = 0, worst = 0;
      for (int64_t c = 0; c < d.n_embd; ++c) {
        scale = std::max(scale, std::fabs(want[r][c]));
        worst = std::max(worst, std::fabs(want[r][c] - ctx.tap(l + 1, r)[c]));
      }
      // Most rows agree to ~1e-7 of their scale; a K or V value whose f32 and double forms
      // round to different f16 neighbours moves a row by up to ~1e-4 (seen: 1.3e-4 with the
      // SIMD kernels, 3.6e-5 with the scalar ones). A wrong expert, weight or width is O(1).
      EXPECT_LT(worst, 1e-3 * scale) << "layer " << l << " row " << r;
    }
  }
}

// Every row's logits in one batch equal its logits decoded alone, bitwise: rows that pick the
// same experts at different batch positions, and two interleaved sequences.
TEST(Moe, BatchedEqualsTokenByTokenBitwise) {
  for (DType type : {DType::kF32, DType::kQ8_0}) {
    Model m(tiny_model("qwen3moe", type));
    testing_support::expect_interleaved_bitwise(m, kPrompt, testing_support::logits_token_by_token(m, kPrompt),
                                                std::string(dtype_name(type)));
  }
}

TEST(Moe, BadFilesAreRefusedNamingTheKeyOrTensor) {
  PerLayer more_used;
  more_used.n_used = {4, 7};  // layer 1 has 6 experts
  expect_load_error(per_layer_model("used", more_used), {"expert_used_count", "layer 1", "7"});
  expect_load_error(per_layer_model("len", PerLayer{}, [](GgufWriter& w) {
                      w.set_array("qwen3moe.expert_count", std::vector<int32_t>{16, 6, 6});
                    }),
                    {"expert_count", "expected 2", "got 3"});
  // A router one column short, an expert stack with one expert too few.
  PerLayer p;
  const std::string router = per_layer_model("router", p, [](GgufWriter& w) {
    w.set_array("qwen3moe.expert_count", std::vector<int32_t>{16, 5});
  });
  expect_load_error(router, {"blk.1.ffn_gate_inp.weight", "shape"});
  const std::string width = per_layer_model("width", p, [](GgufWriter& w) {
    w.set_array("qwen3moe.expert_feed_forward_length", std::vector<int32_t>{128, 64});
  });
  expect_load_error(width, {"blk.1.ffn_gate_exps.weight", "{256, 96, 6}", "{256, 64, 6}"});
}

}  // namespace
}  // namespace fulgur
