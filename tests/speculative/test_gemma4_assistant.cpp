// The Gemma 4 assistant drafter (speculative/drafters/gemma4_assistant.h) on the tiny generated
// gemma4 target (6 layers, sliding window 16) and assistants `fulgur synth` writes for it:
//  * the assistant's logits and projected hidden state, attending to the target context's cache
//    of its layers 4 (sliding) and 5 (full) past the window, equal a scalar re-implementation
//    written here from the GGUF's tensors (seed row and a chained row);
//  * greedy output identical with and without the assistant, 1 and 4 sequences: a random one
//    (drafts rejected), the same with its drafts replaced by the target's continuation corrupted
//    at a cycling position (accepted at every position: the target's KV rolled back under it),
//    and an "echo" assistant whose drafts are accepted exactly where the target repeats a token;
//  * sampled output has the target's distribution (every emitted token checked);
//  * bad input: a non-gemma4 target, another width or vocabulary, a plain model as assistant, an
//    assistant loaded alone, a context without the KV source;
//  * its Hugging Face checkpoint (synth --hf) converted by `fulgur convert --target` gives the
//    synth's tensors and logits; bad checkpoints are refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>

#include "controlled_drafters.h"
#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "core/error.h"
#include "emission_check.h"
#include "gguf/gguf_reader.h"
#include "gguf_edit.h"
#include "model/desc.h"
#include "sampling/rng.h"
#include "spec_fixture.h"
#include "speculative/drafters/gemma4_assistant.h"
#include "synth/assistant_synth.h"

namespace fulgur {
namespace {

using testing_support::ControlledDrafter;
using testing_support::greedy_sampling;
using testing_support::plain_generate;
using testing_support::test_prompts;
using testing_support::tiny_model;

using testing_support::kNPredict;

const std::string& target_path() {
  static const std::string p = tiny_model("gemma4", DType::kF32, 1);
  return p;
}
const Model& target() {
  static const Model m(target_path());
  return m;
}

std::string assistant_path(bool echo, uint64_t seed = 3) {
  const std::string path = ::testing::TempDir() + "/fulgur_gemma4_assistant_" +
                           (echo ? "echo_" : "") + std::to_string(seed) + ".gguf";
  AssistantSynthOptions o;
  o.target = target_path();
  o.out = path;
  o.seed = seed;
  o.echo = echo;
  synth_gemma4_assistant(o);
  return path;
}

std::unique_ptr<ChainDrafter> load(const Context& ctx, const std::string& path, int n_max) {
  ChainParams p;
  p.n_max = n_max;
  p.context = {.n_ctx = 256, .n_batch = 64, .n_threads = 1};
  return make_gemma4_assistant_drafter(target(), ctx, path, p);
}

// ---- the scalar re-implementation --------------------------------------------------------

using Vec = std::vector<double>;

struct Tensor {
  std::vector<float> v;
  int64_t cols = 0;
  const float* row(int64_t r) const { return v.data() + r * cols; }
};

Tensor f32(const GgufReader& g, const std::string& name) {
  testing_support::F32Tensor t = testing_support::read_f32(g, name);
  return {std::move(t.data), g.tensor(name).ne[0]};
}

// y = W x for W [rows][cols].
Vec mat(const Tensor& w, const Vec& x) {
  const int64_t rows = static_cast<int64_t>(w.v.size()) / w.cols;
  EXPECT_EQ(static_cast<int64_t>(x.size()), w.cols);
  Vec y(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < w.cols; ++c) y[r] += static_cast<double>(w.row(r)[c]) * x[c];
  }
  return y;
}

// RMSNorm of x[off, off + n) times gain (or 1).
void rms_norm(Vec& x, int64_t off, int64_t n, const float* gain, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) x[off + i] *= s * (gain ? gain[i] : 1.0);
}

// NEOX RoPE of one head x[off, off + dh) at position pos: pairs (i, i + n_rot/2).
void rope(Vec& x, int64_t off, int64_t pos, const kernels::RopeParams& r) {
  const int64_t half = r.n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    double theta =
        static_cast<double>(pos) * std::pow(static_cast<double>(r.freq_base), -2.0 * i / r.n_rot);
    if (r.freq_factors) theta /= r.freq_factors[i];
    const double c = std::cos(theta), s = std::sin(theta), a = x[off + i], b = x[off + i + half];
    x[off + i] = a * c - b * s;
    x[off + i + half] = a * s + b * c;
  }
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// K and V the target's layer l keeps for a row whose layer input is x (Gemma 4: k_norm and RoPE
// on K; V = attn_v · h or K's projection before its norm, RMS-normed without a weight).
std::pair<Vec, Vec> target_kv(const GgufReader& g, int64_t l, const std::vector<float>& x_in,
                              int64_t pos) {
  const ModelDesc& d = target().desc();
  const AttentionDesc& a = d.layers[static_cast<size_t>(l)].attn;
  const std::string p = "blk." + std::to_string(l) + ".";
  Vec h(x_in.begin(), x_in.end());
  rms_norm(h, 0, d.n_embd, f32(g, p + "attn_norm.weight").v.data(), d.rms_eps);
  Vec k = mat(f32(g, p + "attn_k.weight"), h);
  Vec v = g.find_tensor(p + "attn_v.weight") ? mat(f32(g, p + "attn_v.weight"), h) : k;
  const Tensor k_norm = f32(g, p + "attn_k_norm.weight");
  for (int64_t hd = 0; hd < a.n_head_kv; ++hd) {
    rms_norm(k, hd * a.head_dim, a.head_dim, k_norm.v.data(), d.rms_eps);
    rope(k, hd * a.head_dim, pos, d.rope_of(a));
    rms_norm(v, hd * a.head_dim, a.head_dim, nullptr, d.rms_eps);
  }
  return {k, v};
}

struct Reference {
  Vec logits, projected;
};

// One assistant row: token `tok` at position `pos` with input h, attending to the target's
// kept K/V rows kv[l] (positions 0..pos-1) of the layers it reads.
Reference assistant_row(const GgufReader& g, int32_t tok, int64_t pos, const Vec& h_in,
                        const std::vector<std::vector<std::pair<Vec, Vec>>>& kv_by_layer) {
  const Model& t = target();
  const GgufReader& tg = t.gguf();
  const int64_t Et = t.n_embd(), E = g.get_i64("gemma4-assistant.embedding_length");
  const double eps = g.get_f32("gemma4-assistant.attention.layer_norm_rms_epsilon");
  const std::vector<bool> swa =
      g.get_array<bool>("gemma4-assistant.attention.sliding_window_pattern");
  const int64_t window = g.get_i64("gemma4-assistant.attention.sliding_window");
  // x = pre · [target embedding · sqrt(Et) ; h]
  const Tensor temb = f32(tg, "token_embd.weight");
  Vec in(static_cast<size_t>(2 * Et));
  for (int64_t i = 0; i < Et; ++i) in[i] = temb.row(tok)[i] * std::sqrt(static_cast<double>(Et));
  for (int64_t i = 0; i < Et; ++i) in[Et + i] = h_in[i];
  Vec x = mat(f32(g, "nextn.pre_projection.weight"), in);
  const ModelDesc& td = t.desc();
  for (size_t l = 0; l < swa.size(); ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t src = td.n_layer() - (swa[l] ? 2 : 1);  // the target layer it reads
    const AttentionDesc& a = td.layers[static_cast<size_t>(src)].attn;
    const int64_t Dh = a.head_dim, H = a.n_head, Hkv = a.n_head_kv;
    Vec hn = x;
    rms_norm(hn, 0, E, f32(g, p + "attn_norm.weight").v.data(), eps);
    Vec q = mat(f32(g, p + "attn_q.weight"), hn);
    const Tensor q_norm = f32(g, p + "attn_q_norm.weight");
    for (int64_t hd = 0; hd < H; ++hd) {
      rms_norm(q, hd * Dh, Dh, q_norm.v.data(), eps);
      rope(q, hd * Dh, pos, td.rope_of(a));
    }
    const auto& kv = kv_by_layer[static_cast<size_t>(src)];
    Vec att(static_cast<size_t>(H * Dh), 0.0);
    for (int64_t hd = 0; hd < H; ++hd) {
      const int64_t g_kv = hd / (H / Hkv);
      std::vector<double> score;
      std::vector<int64_t> at;
      for (int64_t j = 0; j < static_cast<int64_t>(kv.size()) && j < pos; ++j) {
        if (swa[l] && pos - j >= window) continue;
        double s = 0;
        for (int64_t i = 0; i < Dh; ++i)
          s += q[hd * Dh + i] * kv[j].first[g_kv * Dh + i];  // scale 1
        score.push_back(s);
        at.push_back(j);
      }
      double mx = -1e300, sum = 0;
      for (double s : score) mx = std::max(mx, s);
      for (double& s : score) sum += (s = std::exp(s - mx));
      for (size_t k = 0; k < score.size(); ++k) {
        for (int64_t i = 0; i < Dh; ++i)
          att[hd * Dh + i] += score[k] / sum * kv[at[k]].second[g_kv * Dh + i];
      }
    }
    Vec o = mat(f32(g, p + "attn_output.weight"), att);
    rms_norm(o, 0, E, f32(g, p + "post_attention_norm.weight").v.data(), eps);
    for (int64_t i = 0; i < E; ++i) x[i] += o[i];
    Vec fh = x;
    rms_norm(fh, 0, E, f32(g, p + "ffn_norm.weight").v.data(), eps);
    Vec gate = mat(f32(g, p + "ffn_gate.weight"), fh), up = mat(f32(g, p + "ffn_up.weight"), fh);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
    Vec f = mat(f32(g, p + "ffn_down.weight"), gate);
    rms_norm(f, 0, E, f32(g, p + "post_ffw_norm.weight").v.data(), eps);
    const double scale = f32(g, p + "layer_output_scale.weight").v[0];
    for (int64_t i = 0; i < E; ++i) x[i] = (x[i] + f[i]) * scale;
  }
  rms_norm(x, 0, E, f32(g, "output_norm.weight").v.data(), eps);
  Reference r;
  r.logits = mat(f32(g, "token_embd.weight"), x);
  const double cap = g.get_f32("gemma4-assistant.final_logit_softcapping");
  for (double& z : r.logits) z = cap * std::tanh(z / cap);
  r.projected = mat(f32(g, "nextn.post_projection.weight"), x);
  return r;
}

double max_abs_diff(const float* a, const Vec& b) {
  double m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

TEST(Gemma4Assistant, LogitsMatchAScalarReimplementation) {
  const Model& t = target();
  const std::string path = assistant_path(false);
  const GgufReader g(path);
  const Model assistant(path, ModelOptions{.base = &t});
  const int64_t n_layer = t.n_layer();
  // A prompt longer than the window (16), so the sliding layer's mask matters.
  std::vector<int32_t> prompt;
  for (int i = 0; i < 27; ++i) prompt.push_back(static_cast<int32_t>((i * 37 + 11) % 200 + 3));
  const int64_t P = static_cast<int64_t>(prompt.size()) - 1;  // the anchor's position
  Context tc(t, {.n_ctx = 128, .n_batch = 64, .n_threads = 1});
  tc.set_taps(
      {static_cast<int>(n_layer - 2), static_cast<int>(n_layer - 1), final_norm_tap(n_layer)});
  Batch b;
  for (int64_t i = 0; i < P; ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == P);
  tc.decode(b);
  // The target's K/V of layers n-2, n-1 for positions 0..P-1, from their layer inputs.
  std::vector<std::vector<std::pair<Vec, Vec>>> kv(static_cast<size_t>(n_layer));
  for (int tap = 0; tap < 2; ++tap) {
    const int64_t l = n_layer - 2 + tap;
    for (int64_t i = 0; i < P; ++i) {
      const float* x = tc.tap(tap, i);
      kv[static_cast<size_t>(l)].push_back(
          target_kv(t.gguf(), l, std::vector<float>(x, x + t.n_embd()), i));
    }
  }
  const float* h = tc.tap(2, P - 1);
  for (int64_t i = 0; i < t.n_embd(); ++i)
    ASSERT_FLOAT_EQ(h[i], tc.hidden(P - 1)[i]) << "the normed tap, at " << i;

  Context ac(assistant, {.n_ctx = 16, .n_batch = 8, .n_threads = 1});
  ac.read_kv_from(&tc);
  // The seed row, then one chained row at the same position.
  Batch s;
  s.add(prompt[P], static_cast<int32_t>(P), 0, true);
  s.aux.assign(h, h + t.n_embd());
  ac.decode(s);
  const Reference seed = assistant_row(g, prompt[P], P, Vec(h, h + t.n_embd()), kv);
  // f16 K and V in the cache, f32 sums: the logits (soft-capped at 30) agree to ~1e-4, the
  // projection (entries up to ~10) to ~2e-3.
  EXPECT_LT(max_abs_diff(ac.logits(0), seed.logits), 2e-3);
  EXPECT_LT(max_abs_diff(ac.projected_hidden(0), seed.projected), 2e-2);
  std::printf("seed row: logits within %.2e, projection within %.2e of the reference\n",
              max_abs_diff(ac.logits(0), seed.logits),
              max_abs_diff(ac.projected_hidden(0), seed.projected));
  const std::vector<float> chained(ac.projected_hidden(0), ac.projected_hidden(0) + t.n_embd());
  s.clear();
  s.add(prompt[3], static_cast<int32_t>(P), 0, true);
  s.aux = chained;
  ac.decode(s);
  const Reference next = assistant_row(g, prompt[3], P, Vec(chained.begin(), chained.end()), kv);
  EXPECT_LT(max_abs_diff(ac.logits(0), next.logits), 2e-3);
  // The check can fail: a cache missing the last rows (as if the assistant read a stale cache)
  // moves the logits far more than the tolerance.
  for (auto& rows : kv) rows.resize(std::min<size_t>(rows.size(), static_cast<size_t>(P / 2)));
  const Reference stale = assistant_row(g, prompt[P], P, Vec(h, h + t.n_embd()), kv);
  double moved = 0;
  for (size_t i = 0; i < stale.logits.size(); ++i)
    moved = std::max(moved, std::abs(stale.logits[i] - seed.logits[i]));
  EXPECT_GT(moved, 0.1);
}

// The drafter's chain is the assistant's own chain, run here by hand through a context attached
// to the target's: the seed row (anchor, the target's normed hidden state before it) and each
// chained row (the token drafted, the assistant's projection of the row before) at the anchor's
// position, attending to what the target holds for the sequence, [0, anchor_pos). Greedy: the
// same tokens; sampled at temperature 1: each q is the softmax of the hand-run row's logits.
TEST(Gemma4Assistant, DraftsAreTheAssistantsChain) {
  const std::string path = assistant_path(false);
  const Model& t = target();
  const Model assistant(path, ModelOptions{.base = &t});
  const int64_t E = t.n_embd(), V = t.n_vocab();
  SamplerParams sampled;
  sampled.temperature = 1.0f;
  sampled.top_k = 0;
  sampled.top_p = 1.0f;
  sampled.min_p = 0.0f;
  for (const SamplerParams& sp : {greedy_sampling(), sampled}) {
    for (const std::vector<int32_t>& history : {test_prompts()[0], test_prompts()[1]}) {
      const int32_t n = static_cast<int32_t>(history.size()) - 1;
      const std::string what = cat("temperature ", sp.temperature, ", history of ", history.size());
      Context tc(t, {.n_ctx = 128, .n_batch = 64, .n_threads = 1});
      auto d = load(tc, path, 3);
      testing_support::commit_history(*d, tc, 0, history, n);
      Rng rng(7);
      DraftRequest req;
      req.anchor = history.back();
      req.anchor_pos = n;
      req.n_max = 3;
      req.sampling = &sp;
      req.rng = &rng;
      Draft got;
      d->draft(req, got);
      ASSERT_EQ(got.tokens.size(), 3u) << what;
      Context ac(assistant, {.n_ctx = 16, .n_batch = 4, .n_threads = 1});
      ac.read_kv_from(&tc);
      std::vector<float> h(tc.tap(0, n - 1), tc.tap(0, n - 1) + E);  // commit_history's taps: the drafter's
      for (size_t i = 0; i < 3; ++i) {
        Batch b;
        b.add(i == 0 ? req.anchor : got.tokens[i - 1], n, 0, true);
        b.aux = h;
        ac.decode(b);
        const float* z = ac.logits(0);
        if (sp.temperature == 0.0f) {
          EXPECT_EQ(got.tokens[i], std::max_element(z, z + V) - z) << what << ", token " << i;
        } else {
          ASSERT_EQ(got.q.size(), 3u) << what;
          const double mx = *std::max_element(z, z + V);
          double sum = 0, diff = 0;
          for (int64_t v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
          for (int64_t v = 0; v < V; ++v) {
            diff = std::max(diff, std::abs(got.q[i].prob(static_cast<int32_t>(v)) - std::exp(z[v] - mx) / sum));
          }
          EXPECT_LT(diff, 1e-6) << what << ", q of token " << i;
        }
        h.assign(ac.projected_hidden(0), ac.projected_hidden(0) + E);
      }
    }
  }
}

// ---- greedy losslessness ------------------------------------------------------------------

struct SpecRun {
  std::vector<std::vector<int32_t>> out;
  GenerationStats stats;
  std::vector<int64_t> accepted;  // [prompts] drafted tokens accepted per sequence
};

// The prompts as sequences 0.. of one generator with the assistant (wrapped by `wrap` when given)
// as its only drafter, at fixed draft lengths.
SpecRun run_with(const std::string& path, int n_max,
                 const std::vector<std::vector<int32_t>>& prompts,
                 const std::vector<int>& n_predict,
                 const std::function<Drafter&(ChainDrafter&)>& wrap = {}) {
  Context ctx(target(), {.n_ctx = 1024, .n_batch = 64, .n_threads = 1, .n_seq_max = 4});
  auto d = load(ctx, path, n_max);
  GeneratorParams gp;
  gp.sampling = greedy_sampling();
  gp.spec.schedule = SpecSchedule::kFixed;
  Generator gen(ctx, gp, {wrap ? &wrap(*d) : d.get()});
  for (size_t i = 0; i < prompts.size(); ++i)
    gen.start(static_cast<int>(i), prompts[i], n_predict[i]);
  gen.run();
  SpecRun r;
  for (size_t i = 0; i < prompts.size(); ++i) {
    r.out.push_back(gen.output(static_cast<int>(i)));
    r.accepted.push_back(gen.seq_stats(static_cast<int>(i)).accepted);
  }
  r.stats = gen.stats();
  return r;
}

std::vector<std::vector<int32_t>> plain_outputs() {
  std::vector<std::vector<int32_t>> out;
  const auto prompts = test_prompts();
  for (size_t i = 0; i < prompts.size(); ++i)
    out.push_back(plain_generate(target(), prompts[i], kNPredict[i], greedy_sampling(), 0));
  return out;
}

TEST(Gemma4Assistant, GreedyIsIdenticalWithAndWithoutTheAssistant) {
  const std::string path = assistant_path(false);
  const auto prompts = test_prompts();
  const auto want = plain_outputs();
  const int V = static_cast<int>(target().n_vocab());
  for (int n_max : {1, 3}) {
    const std::string what = "n_max " + std::to_string(n_max);
    const SpecRun all = run_with(path, n_max, prompts, kNPredict);
    EXPECT_EQ(all.out, want) << what;
    EXPECT_EQ(all.stats.drafters.at(0).name, "draft-mtp");
    EXPECT_GT(all.stats.drafters.at(0).drafts, 60) << what;
    EXPECT_EQ(run_with(path, n_max, {prompts[1]}, {kNPredict[1]}).out[0], want[1])
        << what << ", alone";
    // Drafts replaced by the target's own continuation, wrong at a cycling position: accepted at
    // every draft position, so the target's cache the assistant reads is rolled back mid-draft.
    std::unique_ptr<ControlledDrafter> controlled;
    const SpecRun c = run_with(path, n_max, prompts, kNPredict, [&](ChainDrafter& d) -> Drafter& {
      controlled =
          std::make_unique<ControlledDrafter>(d, V, ControlledDrafter::Options{.corrupt = true});
      for (size_t i = 0; i < prompts.size(); ++i) {
        controlled->set_reference(static_cast<int>(i), want[i],
                                  static_cast<int32_t>(prompts[i].size()));
      }
      return *controlled;
    });
    EXPECT_EQ(c.out, want) << what << ", controlled";
    EXPECT_EQ(c.stats.drafters.at(0).accepted_at, controlled->expected_accepted_at()) << what;
    for (size_t i = 0; i < static_cast<size_t>(n_max); ++i)
      EXPECT_GT(c.stats.drafters.at(0).accepted_at.at(i), 0) << what;
  }
}

// The echo assistant drafts, at the anchor x_P, what the target's hidden state at P - 1 argmaxes:
// under greedy x_P itself (past the prompt), at every chain step. So a step from anchor position P
// accepts as many drafts as the target's next tokens repeat x_P; the test walks the plain output to
// count them.
TEST(Gemma4Assistant, EchoAssistantIsAcceptedWhereTheTargetRepeats) {
  const std::string path = assistant_path(true);
  const auto prompts = test_prompts();
  const auto want = plain_outputs();
  for (int n_max : {1, 3}) {
    const SpecRun r = run_with(path, n_max, prompts, kNPredict);
    EXPECT_EQ(r.out, want) << "n_max " << n_max;
    std::vector<int64_t> expected(prompts.size(), 0);
    for (size_t s = 0; s < prompts.size(); ++s) {
      std::vector<int32_t> all = prompts[s];
      all.insert(all.end(), want[s].begin(), want[s].end());
      // Anchors: the prompt's last token, then the token after each step's accepted drafts. At
      // the first, the drafted token is what the target predicts from the prompt before it (not
      // necessarily the prompt's last token); at position 0 the target holds nothing to attend
      // to: no draft.
      const size_t first = prompts[s].size() - 1;
      int32_t first_draft = -1;
      if (first > 0) {
        const std::vector<int32_t> before(prompts[s].begin(), prompts[s].end() - 1);
        first_draft = plain_generate(target(), before, 1, greedy_sampling(), 0)[0];
      }
      for (size_t a = first; a + 1 < all.size();) {
        const int32_t drafted = a == first ? first_draft : all[a];
        int k = 0;
        while (a > 0 && k < n_max && a + 1 + k < all.size() - 1 && all[a + 1 + k] == drafted) ++k;
        expected[s] += k;
        a += static_cast<size_t>(k) + 1;
      }
    }
    ASSERT_GT(std::accumulate(expected.begin(), expected.end(), int64_t{0}), 0)
        << "the target never repeats a token here: the test proves nothing";
    EXPECT_EQ(r.accepted, expected) << "n_max " << n_max;
  }
}

TEST(Gemma4Assistant, SampledOutputHasTheTargetsDistribution) {
  const std::string path = assistant_path(false);
  SamplerParams sp;
  sp.temperature = 4.0f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  std::unique_ptr<ChainDrafter> d;
  const auto runs =
      testing_support::sampled_rounds_for(target(), sp, [&](Context& ctx) -> Drafter& {
        d = load(ctx, path, 2);
        return *d;
      });
  testing_support::expect_emissions_lossless(
      target(), sp, runs, 2, 100,
      {testing_support::Simulated::kArgmaxBonus, testing_support::Simulated::kResampleP});
}

// ---- bad input ----------------------------------------------------------------------------

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one saying '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Gemma4Assistant, BadInputIsRefusedByName) {
  const std::string good = assistant_path(false);
  Context ctx(target(), {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  expect_error([&] { Model alone(good); }, "load it as a draft");
  // A target of another arch.
  const Model qwen(tiny_model("qwen3", DType::kF32, 1));
  expect_error([&] { Model m(good, ModelOptions{.base = &qwen}); },
               "an assistant drafts for a gemma4 target only");
  // Another width than the target's.
  testing_support::GgufEdit wide;
  wide.metadata = [](GgufWriter& w) { w.set_u32("gemma4-assistant.embedding_length_out", 320); };
  const std::string wide_path = testing_support::write_edited_gguf(good, good + ".wide.gguf", wide);
  expect_error([&] { load(ctx, wide_path, 2); }, "embedding_length_out 320");
  // A vocabulary of another size: the target's embedding cut.
  {
    const GgufReader r(good);
    testing_support::F32Tensor embd = testing_support::read_f32(r, "token_embd.weight");
    const int64_t E = r.tensor("token_embd.weight").ne[0];
    embd.data.resize(static_cast<size_t>(E * 100));
    embd.shape = {E, 100};
    testing_support::GgufEdit cut;
    cut.tensors["token_embd.weight"] = std::move(embd);
    const std::string cut_path = testing_support::write_edited_gguf(good, good + ".cut.gguf", cut);
    expect_error([&] { load(ctx, cut_path, 2); }, "vocabulary has 100 tokens");
  }
  // A plain model where an assistant is expected (it loads as itself, then is refused).
  expect_error([&] { load(ctx, target_path(), 2); }, "is not a Gemma 4 assistant");
  // Synthesized for a target that is not gemma4.
  AssistantSynthOptions o;
  o.target = tiny_model("qwen3", DType::kF32, 1);
  o.out = ::testing::TempDir() + "/fulgur_gemma4_assistant_for_qwen.gguf";
  expect_error([&] { synth_gemma4_assistant(o); }, "not gemma4");
  // A context whose model attends to another's cache, decoded without one.
  const Model assistant(good, ModelOptions{.base = &target()});
  Context alone(assistant, {.n_ctx = 16, .n_batch = 4, .n_threads = 1});
  Batch b;
  b.add(5, 3, 0, true);
  b.aux.assign(static_cast<size_t>(target().n_embd()), 0.0f);
  expect_error([&] { alone.decode(b); }, "none is attached");
  // ... or given a context of the wrong model.
  Context qctx(qwen, {.n_ctx = 16, .n_batch = 4, .n_threads = 1});
  expect_error([&] { alone.read_kv_from(&qctx); }, "keeps no cache there");
}

// ---- the Hugging Face checkpoint ---------------------------------------------------------

// `fulgur synth --arch gemma4-assistant --hf DIR` writes the Hugging Face checkpoint of the same
// weights (Gemma4AssistantForCausalLM); `fulgur convert DIR --target T` turns it into the
// synth's file: every tensor the same (names, shapes, bytes), and the same logits and projection
// on a prompt past the window.
TEST(Gemma4Assistant, HfCheckpointConvertsToTheSynthFile) {
  const std::string dir = ::testing::TempDir() + "/fulgur_gemma4_assistant_hf";
  AssistantSynthOptions o;
  o.target = target_path();
  o.out = dir + ".synth.gguf";
  o.seed = 5;
  o.hf_dir = dir;
  synth_gemma4_assistant(o);
  ConvertOptions c;
  c.in_dir = dir;
  c.out_path = dir + ".converted.gguf";
  c.type = DType::kF32;
  c.progress = false;
  c.target = target_path();
  convert_hf_to_gguf(c);
  {
    const GgufReader a(o.out), b(c.out_path);
    EXPECT_EQ(b.get_string("general.architecture"), "gemma4-assistant");
    ASSERT_EQ(a.tensors().size(), b.tensors().size());
    for (const GgufTensorInfo& ta : a.tensors()) {
      const GgufTensorInfo* tb = b.find_tensor(ta.name);
      ASSERT_NE(tb, nullptr) << ta.name;
      ASSERT_EQ(ta.type, tb->type) << ta.name;
      ASSERT_EQ(ta.shape(), tb->shape()) << ta.name;
      EXPECT_EQ(std::memcmp(ta.data, tb->data, GgufWriter::tensor_nbytes(ta.type, ta.shape())), 0) << ta.name;
    }
    for (const char* key : {"embedding_length", "embedding_length_out", "block_count", "nextn_predict_layers",
                            "attention.key_length", "attention.key_length_swa", "attention.sliding_window",
                            "rope.dimension_count", "rope.dimension_count_swa"}) {
      const std::string k = std::string("gemma4-assistant.") + key;
      EXPECT_EQ(a.get_i64(k), b.get_i64(k)) << k;
    }
    EXPECT_EQ(a.get_string_array("tokenizer.ggml.tokens"), b.get_string_array("tokenizer.ggml.tokens"));
  }
  const Model& t = target();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 23; ++i) prompt.push_back(static_cast<int32_t>((i * 29 + 7) % 200 + 3));
  const int64_t P = static_cast<int64_t>(prompt.size()) - 1;
  Context tc(t, {.n_ctx = 64, .n_batch = 64, .n_threads = 1});
  tc.set_taps({final_norm_tap(t.n_layer())});
  Batch b;
  for (int64_t i = 0; i < P; ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == P);
  tc.decode(b);
  const float* h = tc.tap(0, P - 1);
  std::vector<std::vector<float>> logits, projected;
  for (const std::string& path : {o.out, c.out_path}) {
    const Model assistant(path, ModelOptions{.base = &t});
    Context ac(assistant, {.n_ctx = 16, .n_batch = 8, .n_threads = 1});
    ac.read_kv_from(&tc);
    Batch s;
    s.add(prompt[P], static_cast<int32_t>(P), 0, true);
    s.aux.assign(h, h + t.n_embd());
    ac.decode(s);
    logits.emplace_back(ac.logits(0), ac.logits(0) + t.n_vocab());
    projected.emplace_back(ac.projected_hidden(0), ac.projected_hidden(0) + t.n_embd());
  }
  EXPECT_EQ(logits[0], logits[1]);
  EXPECT_EQ(projected[0], projected[1]);
}

// Assistant checkpoints the converter refuses, by name.
TEST(Gemma4Assistant, BadCheckpointIsRefusedByName) {
  const std::string base = ::testing::TempDir() + "/fulgur_gemma4_assistant_hf_bad";
  AssistantSynthOptions o;
  o.target = target_path();
  o.out = base + ".gguf";
  o.hf_dir = base;
  synth_gemma4_assistant(o);
  const auto convert_edited = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit,
                                  const std::string& part, const std::string& drop = "") {
    SCOPED_TRACE(name);
    const std::string dir = base + "_" + name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    nlohmann::json cfg = HfConfig::load(base).json();
    edit(cfg);
    write_json_file(dir + "/config.json", cfg);
    {
      const Checkpoint ck(base);
      SafetensorsWriter w;
      for (const std::string& n : ck.names()) {
        const SafetensorsTensor& st = ck.tensor(n);
        if (n != drop) w.add(n, st.dtype, st.shape, {st.data, st.bytes});
      }
      w.write(dir + "/model.safetensors");
    }
    ConvertOptions c;
    c.in_dir = dir;
    c.out_path = dir + ".gguf";
    c.progress = false;
    c.target = target_path();
    expect_error([&] { convert_hf_to_gguf(c); }, part);
    EXPECT_FALSE(std::filesystem::exists(c.out_path));
  };
  const auto none = [](nlohmann::json&) {};
  convert_edited("owns_kv", [](auto& c) { c["num_kv_shared_layers"] = 2; }, "num_kv_shared_layers is 2");
  convert_edited("width", [](auto& c) { c["backbone_hidden_size"] = c["hidden_size"]; }, "backbone_hidden_size");
  convert_edited("no_post", none, "post_projection.weight", "post_projection.weight");
  convert_edited("no_scalar", none, "model.layers.3.layer_scalar", "model.layers.3.layer_scalar");
  convert_edited("moe", [](auto& c) {
    c["enable_moe_block"] = true;
    c["num_experts"] = 4;
    c["top_k_experts"] = 2;
    c["moe_intermediate_size"] = 16;
  }, "MoE");
}

}  // namespace
}  // namespace fulgur
