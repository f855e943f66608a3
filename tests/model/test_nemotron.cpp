// Nemotron-H targets (nemotron_h, nemotron_h_moe, the Puzzle form): the description read from
// the file, every layer kind against a scalar reference written here in double from the GGUF
// tensors (Mamba2 over a sequence, attention without RoPE, the ReLU² MLP, the sigmoid-routed
// MoE with its correction bias, latent projection and shared expert), the MTP block (synth
// --mtp) against the same reference, batched decode bitwise equal to token by token, and bad
// files refused naming the tensor or key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "gguf_edit.h"
#include "model/weights.h"
#include "model_fixture.h"
#include "reference_model.h"

namespace fulgur {
namespace {

using testing_support::expect_load_error;
using testing_support::RefModel;
using testing_support::Rows;
using testing_support::ref_attention;
using testing_support::rms_norm;
using testing_support::synth_model_file;

const std::vector<int32_t>& kPrompt = testing_support::kHelloPrompt;

struct Shape {
  const char* arch;
  const char* shape;
};
constexpr Shape kShapes[] = {{"nemotron_h", "tiny"}, {"nemotron_h_moe", "tiny"}, {"nemotron_h_moe", "tiny-puzzle"}};

std::string model_file(const Shape& s, DType type = DType::kF32, uint64_t seed = 1) {
  return synth_model_file(s.arch, s.shape, type, seed);
}

TEST(Nemotron, DescriptionOfTheSynthShapes) {
  const auto kinds = [](const Model& m) {
    std::string out;
    for (const LayerDesc& l : m.desc().layers) {
      out += l.mixer == MixerKind::kMamba2      ? 'M'
             : l.mixer == MixerKind::kAttention ? '*'
             : l.ffn == FfnKind::kRelu2         ? '-'
             : l.ffn == FfnKind::kMoe           ? 'E'
                                                : '?';
    }
    return out;
  };
  const Model dense(model_file(kShapes[0]));
  EXPECT_EQ(kinds(dense), "M-M*-M");
  const ModelDesc& d = dense.desc();
  EXPECT_FLOAT_EQ(d.rms_eps, 1e-5f);
  const Mamba2Desc& ssm = d.layers[0].ssm;
  EXPECT_EQ(ssm.d_inner, 256);
  EXPECT_EQ(ssm.n_heads, 8);
  EXPECT_EQ(ssm.head_dim, 32);
  EXPECT_EQ(ssm.n_groups, 2);
  EXPECT_EQ(ssm.d_state, 16);
  EXPECT_EQ(ssm.conv_kernel, 4);
  EXPECT_NE(dense.weights().layers[0].ssm.conv_bias.data, nullptr);
  EXPECT_EQ(d.layers[1].n_ff, 512);
  EXPECT_FALSE(d.layers[3].attn.rope);
  EXPECT_FALSE(d.layers[3].attn.qk_norm);
  EXPECT_EQ(d.layers[3].attn.n_head_kv, 2);
  EXPECT_EQ(d.kv_heads(0), (std::vector<int64_t>{0, 0, 0, 2, 0, 0}));
  EXPECT_FALSE(dense.weights().tied_output);

  const Model moe(model_file(kShapes[1]));
  EXPECT_EQ(kinds(moe), "MEM*EM");
  const MoeDesc& e = moe.desc().layers[1].moe;
  EXPECT_EQ(e.n_expert, 16);
  EXPECT_EQ(e.n_expert_used, 4);
  EXPECT_EQ(e.n_ff_exp, 128);
  EXPECT_EQ(e.n_ff_shared, 256);
  EXPECT_EQ(e.expert_act, FfnAct::kRelu2);
  EXPECT_EQ(e.shared_act, FfnAct::kRelu2);
  EXPECT_EQ(e.gating, kernels::MoeGating::kSigmoid);
  EXPECT_TRUE(e.selection_bias);
  EXPECT_TRUE(e.norm_weights);
  EXPECT_FLOAT_EQ(e.weights_scale, 2.5f);
  EXPECT_EQ(e.latent, 0);
  EXPECT_FALSE(e.shared_gate);

  // Puzzle: each MoE layer its own expert width and experts used, all latent.
  const Model puzzle(model_file(kShapes[2]));
  EXPECT_EQ(kinds(puzzle), "ME*EME");
  const std::vector<std::pair<int64_t, int64_t>> width_used = {{128, 4}, {64, 2}, {96, 6}};
  int i = 0;
  for (int l : {1, 3, 5}) {
    const MoeDesc& p = puzzle.desc().layers[l].moe;
    EXPECT_EQ(p.n_ff_exp, width_used[i].first) << "layer " << l;
    EXPECT_EQ(p.n_expert_used, width_used[i].second) << "layer " << l;
    EXPECT_EQ(p.latent, 128) << "layer " << l;
    ++i;
  }
}

// ---- the scalar reference of each layer kind, in double, from the file's f32 tensors ----------

double silu(double v) { return v / (1.0 + std::exp(-v)); }
double relu2(double v) { return v > 0 ? v * v : 0.0; }

// Mamba2 (archs-gguf.md §4.4) over the rows of one sequence from an empty state.
Rows ref_mamba2(const RefModel& m, const std::string& p, const Mamba2Desc& d, const Rows& h) {
  const int64_t Di = d.d_inner, Hs = d.n_heads, P = d.head_dim, G = d.n_groups, N = d.d_state;
  const int64_t K = d.conv_kernel, Cm = d.conv_channels();
  const std::vector<double> conv_w = m.vec(p + "ssm_conv1d.weight"), conv_b = m.vec(p + "ssm_conv1d.bias");
  const std::vector<double> dt_b = m.vec(p + "ssm_dt.bias"), A = m.vec(p + "ssm_a"), D = m.vec(p + "ssm_d");
  const std::vector<double> norm = m.vec(p + "ssm_norm.weight");
  Rows xbc_in;  // every row's conv input
  std::vector<double> state(static_cast<size_t>(Hs * P * N), 0.0);
  Rows out;
  for (const std::vector<double>& row : h) {
    const std::vector<double> zxbcdt = m.mul(p + "ssm_in.weight", row);
    xbc_in.emplace_back(zxbcdt.begin() + Di, zxbcdt.begin() + Di + Cm);
    const int64_t t = static_cast<int64_t>(xbc_in.size()) - 1;
    std::vector<double> xbc(static_cast<size_t>(Cm));
    for (int64_t c = 0; c < Cm; ++c) {
      double acc = conv_b[c];
      for (int64_t j = 0; j < K; ++j) {
        const int64_t src = t - (K - 1) + j;
        if (src >= 0) acc += conv_w[c * K + j] * xbc_in[src][c];
      }
      xbc[c] = silu(acc);
    }
    std::vector<double> y(static_cast<size_t>(Di));
    for (int64_t hd = 0; hd < Hs; ++hd) {
      const int64_t g = hd / (Hs / G);
      const double v = zxbcdt[Di + Cm + hd] + dt_b[hd];
      const double delta = v > 20 ? v : std::log1p(std::exp(v));
      const double da = std::exp(delta * A[hd]);
      for (int64_t q = 0; q < P; ++q) {
        const double x = xbc[hd * P + q];
        double acc = 0;
        for (int64_t n = 0; n < N; ++n) {
          double& s = state[(hd * P + q) * N + n];
          s = s * da + xbc[Di + g * N + n] * x * delta;
          acc += s * xbc[Di + G * N + g * N + n];
        }
        y[hd * P + q] = acc + D[hd] * x;
      }
    }
    for (int64_t c = 0; c < Di; ++c) y[c] *= silu(zxbcdt[c]);
    std::vector<double> normed(static_cast<size_t>(Di));
    for (int64_t g = 0; g < G; ++g) {
      const int64_t w = Di / G;
      const std::vector<double> r = rms_norm(y.data() + g * w, w, norm.data() + g * w, 1e-5);
      std::copy(r.begin(), r.end(), normed.begin() + g * w);
    }
    out.push_back(m.mul(p + "ssm_out.weight", normed));
  }
  return out;
}

// down(relu(up · x)²) of a dense tensor pair, or of expert `e` of stacked ones.
std::vector<double> ref_relu2_ffn(const RefModel& m, const std::string& up, const std::string& down,
                                  const std::vector<double>& x, int64_t e = -1) {
  const GgufTensorInfo& u = m.gguf.tensor(up);
  const int64_t F = u.ne[1], out_rows = m.gguf.tensor(down).ne[1];
  std::vector<double> a = e < 0 ? m.mul(up, x) : m.mul(up, x, e * F, F);
  for (double& v : a) v = relu2(v);
  return e < 0 ? m.mul(down, a) : m.mul(down, a, e * out_rows, out_rows);
}

// Sigmoid routing chosen on probability + exp_probs_b, renormalised (llama.cpp's clamp) and
// scaled; ReLU² experts on h or its latent projection; plus the shared expert.
std::vector<double> ref_moe(const RefModel& m, const std::string& p, const MoeDesc& d, const std::vector<double>& h) {
  std::vector<double> prob = m.mul(p + "ffn_gate_inp.weight", h);
  for (double& v : prob) v = 1.0 / (1.0 + std::exp(-v));
  const std::vector<double> bias = m.vec(p + "exp_probs_b.bias");
  std::vector<int> ids(static_cast<size_t>(d.n_expert));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return prob[a] + bias[a] > prob[b] + bias[b]; });
  double sum = 0;
  for (int j = 0; j < d.n_expert_used; ++j) sum += prob[ids[j]];
  const std::vector<double> u = d.latent > 0 ? m.mul(p + "ffn_latent_down.weight", h) : h;
  std::vector<double> routed(u.size(), 0.0);
  for (int j = 0; j < d.n_expert_used; ++j) {
    const double w = prob[ids[j]] / std::max(sum, 6.103515625e-5) * d.weights_scale;
    const std::vector<double> y = ref_relu2_ffn(m, p + "ffn_up_exps.weight", p + "ffn_down_exps.weight", u, ids[j]);
    for (size_t c = 0; c < routed.size(); ++c) routed[c] += w * y[c];
  }
  std::vector<double> out = d.latent > 0 ? m.mul(p + "ffn_latent_up.weight", routed) : routed;
  const std::vector<double> shared = ref_relu2_ffn(m, p + "ffn_up_shexp.weight", p + "ffn_down_shexp.weight", h);
  for (size_t c = 0; c < out.size(); ++c) out[c] += shared[c];
  return out;
}

// Layer l of a nemotron model over the rows x of one sequence at positions 0..n-1: x + the
// block's one sublayer of its normed input.
Rows reference_layer(const RefModel& m, const ModelDesc& d, int l, Rows x) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const LayerDesc& L = d.layers[static_cast<size_t>(l)];
  const std::vector<double> norm = m.vec(p + "attn_norm.weight");
  Rows h;
  for (const std::vector<double>& row : x) h.push_back(rms_norm(row.data(), d.n_embd, norm.data(), d.rms_eps));
  Rows y;
  if (L.mixer == MixerKind::kMamba2) y = ref_mamba2(m, p, L.ssm, h);
  if (L.mixer == MixerKind::kAttention) y = ref_attention(m, p, d, L.attn, h);
  for (const std::vector<double>& row : h) {
    if (L.ffn == FfnKind::kRelu2) y.push_back(ref_relu2_ffn(m, p + "ffn_up.weight", p + "ffn_down.weight", row));
    if (L.ffn == FfnKind::kMoe) y.push_back(ref_moe(m, p, L.moe, row));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    for (int64_t c = 0; c < d.n_embd; ++c) x[i][c] += y[i][c];
  }
  return x;
}

// Every layer's output rows (taps) against the reference applied to its input rows.
TEST(Nemotron, EveryLayerKindMatchesAScalarReference) {
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(std::string(shape.arch) + " " + shape.shape);
    const std::string path = model_file(shape);
    const Model m(path);
    const ModelDesc& d = m.desc();
    Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
    std::vector<int> taps(static_cast<size_t>(d.n_layer() + 1));
    std::iota(taps.begin(), taps.end(), 0);
    ctx.set_taps(taps);
    Batch b;
    for (size_t i = 0; i < kPrompt.size(); ++i) b.add(kPrompt[i], static_cast<int32_t>(i), 0, true);
    ctx.decode(b);
    const RefModel ref(path);
    for (int l = 0; l < d.n_layer(); ++l) {
      Rows in;
      for (int64_t r = 0; r < b.size(); ++r) in.emplace_back(ctx.tap(l, r), ctx.tap(l, r) + d.n_embd);
      const Rows want = reference_layer(ref, d, l, in);
      for (int64_t r = 0; r < b.size(); ++r) {
        double scale = 0, worst = 0;
        for (int64_t c = 0; c < d.n_embd; ++c) {
          scale = std::max(scale, std::fabs(want[r][c] - in[r][c]));
          worst = std::max(worst, std::fabs(want[r][c] - ctx.tap(l + 1, r)[c]));
        }
        // Against the scale of the layer's own output: f32 against double agrees to ~1e-6 of
        // it; a K or V element rounding to the other f16 neighbour moves an attention row by up
        // to ~1e-4. A wrong gate order, group, expert or state is O(1).
        EXPECT_LT(worst, 1e-3 * scale) << "layer " << l << " (" << mixer_kind_name(d.layers[l].mixer) << "/"
                                       << ffn_kind_name(d.layers[l].ffn) << ") row " << r;
      }
    }
  }
}

// Logits of every prompt row, decoded in chunks of `chunk` rows (1 = token by token).
std::vector<std::vector<float>> prompt_logits(const Model& m, int64_t chunk, int64_t n_batch) {
  Context ctx(m, {.n_ctx = 64, .n_batch = n_batch, .n_threads = 2});
  std::vector<std::vector<float>> out;
  for (size_t i0 = 0; i0 < kPrompt.size(); i0 += static_cast<size_t>(chunk)) {
    Batch b;
    for (size_t i = i0; i < std::min(kPrompt.size(), i0 + static_cast<size_t>(chunk)); ++i) {
      b.add(kPrompt[i], static_cast<int32_t>(i), 0, true);
    }
    ctx.decode(b);
    for (int64_t r = 0; r < b.size(); ++r) out.emplace_back(ctx.logits(r), ctx.logits(r) + m.n_vocab());
  }
  return out;
}

// LayerNorm without bias (the MTP block's final_layernorm), in double.
std::vector<double> ref_layer_norm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i];
  return y;
}

// The MTP block of a synth --mtp file, loaded as its own model, against the reference: rows
// (token i, the trunk's output_norm row of i - 1) at positions 1..n-1 through eh_proj over
// [enorm(embedding) ; hnorm(hidden)], the attention behind attn_norm, the feed-forward behind
// post_attention_norm, the LayerNorm shared_head_norm and the trunk's output head. The file's
// trunk is the file without the block: the same logits, bit for bit.
TEST(Nemotron, MtpBlockMatchesAScalarReference) {
  for (const Shape& shape : {kShapes[0], kShapes[1]}) {
    SCOPED_TRACE(std::string(shape.arch) + " " + shape.shape);
    const std::string path = synth_model_file(shape.arch, shape.shape, DType::kF32, 1, true);
    const Model m(path);
    const ModelDesc& d = m.desc();
    ASSERT_EQ(d.n_nextn, 1);
    ASSERT_EQ(d.n_layer(), 6);
    EXPECT_EQ(prompt_logits(m, 12, 16), prompt_logits(Model(model_file(shape)), 12, 16));
    Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
    ctx.set_taps({final_norm_tap(d.n_layer())});
    Batch b;
    for (size_t i = 0; i < kPrompt.size(); ++i) b.add(kPrompt[i], static_cast<int32_t>(i), 0, false);
    ctx.decode(b);

    const Model block(path, {.base = &m, .nextn = true});
    ASSERT_EQ(block.n_layer(), 1);
    EXPECT_TRUE(block.pairs_normed_hidden());
    const LayerDesc& L = block.desc().layers[0];
    EXPECT_EQ(L.mixer, MixerKind::kAttention);
    EXPECT_FALSE(L.attn.rope);
    EXPECT_EQ(L.ffn, std::string(shape.arch) == "nemotron_h" ? FfnKind::kRelu2 : FfnKind::kMoe);
    Context mtp(block, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
    Batch mb;
    for (size_t i = 1; i < kPrompt.size(); ++i) {
      mb.add(kPrompt[i], static_cast<int32_t>(i), 0, true);
      const float* h = ctx.tap(0, static_cast<int64_t>(i) - 1);
      mb.aux.insert(mb.aux.end(), h, h + d.n_embd);
    }
    mtp.decode(mb);

    const RefModel ref(path);
    const std::string p = "blk.6.";
    const double eps = d.rms_eps;
    const std::vector<double> enorm = ref.vec(p + "nextn.enorm.weight"), hnorm = ref.vec(p + "nextn.hnorm.weight");
    Rows x;
    for (int64_t r = 0; r < mb.size(); ++r) {
      const std::vector<double> e = ref.vec_row("token_embd.weight", mb.tokens[r]);
      const std::vector<double> h(mb.aux.begin() + r * d.n_embd, mb.aux.begin() + (r + 1) * d.n_embd);
      std::vector<double> in = rms_norm(e.data(), d.n_embd, enorm.data(), eps);
      const std::vector<double> hn = rms_norm(h.data(), d.n_embd, hnorm.data(), eps);
      in.insert(in.end(), hn.begin(), hn.end());
      x.push_back(ref.mul(p + "nextn.eh_proj.weight", in));
    }
    // A block whose attention's rows start at position 1 attends like one starting at 0 (no RoPE).
    const std::vector<double> attn_norm = ref.vec(p + "attn_norm.weight"), ffn_norm = ref.vec(p + "post_attention_norm.weight");
    Rows h;
    for (const auto& row : x) h.push_back(rms_norm(row.data(), d.n_embd, attn_norm.data(), eps));
    const Rows attn = ref_attention(ref, p, block.desc(), L.attn, h);
    for (size_t i = 0; i < x.size(); ++i) {
      for (int64_t c = 0; c < d.n_embd; ++c) x[i][c] += attn[i][c];
      const std::vector<double> hf = rms_norm(x[i].data(), d.n_embd, ffn_norm.data(), eps);
      const std::vector<double> f = L.ffn == FfnKind::kMoe ? ref_moe(ref, p, L.moe, hf)
                                                           : ref_relu2_ffn(ref, p + "ffn_up.weight", p + "ffn_down.weight", hf);
      for (int64_t c = 0; c < d.n_embd; ++c) x[i][c] += f[c];
    }
    const std::vector<double> head_norm = ref.vec(p + "nextn.shared_head_norm.weight");
    for (int64_t r = 0; r < mb.size(); ++r) {
      const std::vector<double> want = ref.mul("output.weight", ref_layer_norm(x[r], head_norm, eps));
      double worst = 0, lo = want[0], hi = want[0];
      for (size_t v = 0; v < want.size(); ++v) {
        worst = std::max(worst, std::fabs(want[v] - mtp.logits(r)[v]));
        lo = std::min(lo, want[v]);
        hi = std::max(hi, want[v]);
      }
      // f32 against double: ~1e-6 of the logits' spread (1e-4 where a K/V element rounds to the
      // other f16 neighbour); a wrong norm kind, input order or sublayer is O(1).
      EXPECT_LT(worst, 1e-3 * (hi - lo)) << "MTP row " << r;
    }
  }
}

// Whatever the split of rows into decodes and chunks, every row's logits are the same bits:
// the recurrence steps token by token in every one (what makes verification lossless).
TEST(Nemotron, BatchedEqualsTokenByTokenBitwise) {
  for (const Shape& shape : kShapes) {
    for (DType type : {DType::kF32, DType::kQ8_0}) {
      SCOPED_TRACE(std::string(shape.arch) + " " + shape.shape + " " + std::string(dtype_name(type)));
      const Model m(model_file(shape, type));
      const auto alone = prompt_logits(m, 1, 16);
      for (const auto& [chunk, n_batch] : {std::pair{12, 16}, std::pair{12, 5}, std::pair{4, 16}}) {
        const auto got = prompt_logits(m, chunk, n_batch);
        for (size_t i = 0; i < alone.size(); ++i) {
          EXPECT_EQ(std::memcmp(got[i].data(), alone[i].data(), alone[i].size() * sizeof(float)), 0)
              << "row " << i << ", decodes of " << chunk << " rows, n_batch " << n_batch;
        }
      }
    }
  }
}

// Two sequences interleaved row by row in one batch (the Mamba2 layer gathers each one's rows)
// give each sequence's logits decoded alone.
TEST(Nemotron, InterleavedSequencesEqualEachAlone) {
  for (const Shape& shape : kShapes) {
    const Model m(model_file(shape, DType::kQ8_0));
    testing_support::expect_interleaved_bitwise(m, kPrompt, prompt_logits(m, 1, 16),
                                                std::string(shape.arch) + " " + shape.shape);
  }
}

// ---- bad files ------------------------------------------------------------------------------

std::string edited(const Shape& shape, const std::string& name, const testing_support::GgufEdit& edit) {
  return testing_support::write_edited_gguf(model_file(shape), ::testing::TempDir() + "/fulgur_bad_" + name + ".gguf",
                                            edit);
}

testing_support::F32Tensor zeros(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {std::move(shape), std::vector<float>(static_cast<size_t>(n), 0.0f)};
}

TEST(Nemotron, BadFilesAreRefusedNamingTheTensorOrKey) {
  const Shape dense = kShapes[0], puzzle = kShapes[2];
  const auto tensor = [](const char* name, std::vector<int64_t> shape) {
    testing_support::GgufEdit e;
    e.tensors[name] = zeros(std::move(shape));
    return e;
  };
  // Mamba2 tensors of the wrong shape: one conv channel short, the in-projection one row short,
  // the norm with 4 groups of the wrong width.
  expect_load_error(edited(dense, "conv", tensor("blk.0.ssm_conv1d.weight", {4, 319})),
                    {"blk.0.ssm_conv1d.weight", "{4, 319}", "{4, 320}"});
  expect_load_error(edited(dense, "in", tensor("blk.2.ssm_in.weight", {256, 583})),
                    {"blk.2.ssm_in.weight", "{256, 583}", "{256, 584}"});
  expect_load_error(edited(dense, "norm", tensor("blk.5.ssm_norm.weight", {64, 4})),
                    {"blk.5.ssm_norm.weight", "{64, 4}", "{128, 2}"});
  expect_load_error(edited(dense, "a", tensor("blk.0.ssm_a", {8})), {"blk.0.ssm_a", "{8}", "{1, 8}"});

  const auto keys = [](std::function<void(GgufWriter&)> f) {
    testing_support::GgufEdit e;
    e.metadata = std::move(f);
    return e;
  };
  // Per-layer arrays of the wrong length.
  expect_load_error(edited(dense, "ff_len", keys([](GgufWriter& w) {
                             w.set_array("nemotron_h.feed_forward_length", std::vector<int32_t>{0, 512, 0, 0, 512, 0, 0});
                           })),
                    {"nemotron_h.feed_forward_length", "expected 6", "got 7"});
  expect_load_error(edited(dense, "kv_len", keys([](GgufWriter& w) {
                             w.set_array("nemotron_h.attention.head_count_kv", std::vector<int32_t>{0, 0, 2});
                           })),
                    {"nemotron_h.attention.head_count_kv", "expected 6", "got 3"});
  expect_load_error(edited(puzzle, "used_len", keys([](GgufWriter& w) {
                             w.set_array("nemotron_h_moe.expert_used_count", std::vector<int32_t>{0, 4, 0, 2, 0});
                           })),
                    {"nemotron_h_moe.expert_used_count", "expected 6", "got 5"});
  // The SSM keys must split into whole heads and groups.
  expect_load_error(edited(dense, "groups", keys([](GgufWriter& w) { w.set_u32("nemotron_h.ssm.group_count", 3); })),
                    {"ssm.group_count 3", "multiple"});
  // Puzzle: a layer's expert width must be what its tensors hold, its experts used at least one.
  expect_load_error(edited(puzzle, "width", keys([](GgufWriter& w) {
                             w.set_array("nemotron_h_moe.expert_feed_forward_length",
                                         std::vector<int32_t>{0, 128, 0, 96, 0, 96});
                           })),
                    {"layer 3", "expert_feed_forward_length 96", "blk.3.ffn_up_exps.weight", "width 64"});
  expect_load_error(edited(puzzle, "used0", keys([](GgufWriter& w) {
                             w.set_array("nemotron_h_moe.expert_used_count", std::vector<int32_t>{0, 4, 0, 0, 0, 6});
                           })),
                    {"layer 3", "expert_used_count 0"});
  // Group-limited routing (n_group > 1) is not implemented: refused, not ignored.
  expect_load_error(edited(puzzle, "groups_moe", keys([](GgufWriter& w) {
                             w.set_u32("nemotron_h_moe.expert_group_count", 4);
                             w.set_u32("nemotron_h_moe.expert_group_used_count", 2);
                           })),
                    {"expert_group_count", "4", "not supported"});
}

}  // namespace
}  // namespace fulgur
