// gpt-oss (synth tiny: 4 layers alternating a window of 16 and full attention, sinks, q/k/v/o
// biases, YaRN, 8 biased experts of which 4 are used, clamped SwiGLU, untied head): what the
// loader makes of the file, that batched decode is bitwise token-by-token decode (f32 and MXFP4
// experts), that each gpt-oss feature reaches the logits (so the llama.cpp cross-check in
// tests/llama sees it if it were dropped or mis-applied), and that bad files are refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstring>
#include <string>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "model/desc.h"
#include "model/weights.h"
#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::synth_model_file;

// A prompt past the window (16), so the sliding layers forget cells.
std::vector<int32_t> long_prompt(int n = 40) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(32 + (i * 37 + 11) % 90);
  return p;
}

std::vector<float> last_logits(const Model& m, const std::vector<int32_t>& prompt) {
  Context ctx(m, {.n_ctx = 128, .n_batch = 64, .n_threads = 2});
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  ctx.decode(b);
  const int64_t last = b.size() - 1;
  return {ctx.logits(last), ctx.logits(last) + m.n_vocab()};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
  return d;
}

TEST(GptOss, DescriptionFromTheFile) {
  const Model m(synth_model_file("gpt-oss", "tiny", DType::kF32, 1));
  const ModelDesc& d = m.desc();
  ASSERT_EQ(d.n_layer(), 4);
  EXPECT_EQ(d.rope.mode, kernels::RopeMode::kNeox);
  EXPECT_GT(d.rope.ext_factor, 0.0f) << "YaRN";
  EXPECT_FLOAT_EQ(d.rope.freq_scale, 1.0f / 32);
  EXPECT_EQ(d.rope.n_ctx_orig, 4096);
  for (int64_t l = 0; l < d.n_layer(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const LayerDesc& L = d.layers[static_cast<size_t>(l)];
    EXPECT_EQ(L.attn.window, l % 2 == 0 ? 16 : 0) << "even layers slide (llama.cpp's pattern 2)";
    EXPECT_TRUE(L.attn.sinks && L.attn.qkv_bias && L.attn.out_bias);
    EXPECT_EQ(L.attn.head_dim, 32);
    ASSERT_EQ(L.ffn, FfnKind::kMoe);
    EXPECT_EQ(L.moe.n_expert, 8);
    EXPECT_EQ(L.moe.n_expert_used, 4);
    EXPECT_EQ(L.moe.expert_act, FfnAct::kSwiGluOai);
    EXPECT_EQ(L.moe.gating, kernels::MoeGating::kSoftmaxWeight);
    EXPECT_TRUE(L.moe.router_bias && L.moe.expert_bias);
    EXPECT_FALSE(L.moe.norm_weights);
  }
  EXPECT_FALSE(m.weights().tied_output);
  // MXFP4 goes to the expert stacks only, as in released gpt-oss files.
  const GgufReader q(synth_model_file("gpt-oss", "tiny", DType::kMXFP4, 1));
  for (const GgufTensorInfo& t : q.tensors()) {
    const bool expert = t.name.ends_with("_exps.weight");
    EXPECT_EQ(t.type, expert ? DType::kMXFP4 : DType::kF32) << t.name;
  }
}

TEST(GptOss, BatchedDecodeIsTokenByTokenBitwise) {
  for (DType type : {DType::kF32, DType::kMXFP4}) {
    SCOPED_TRACE(dtype_name(type));
    const Model m(synth_model_file("gpt-oss", "tiny", type, 1));
    const std::vector<int32_t> prompt = long_prompt(30);  // two sequences of it fit the fixture's 64 cells
    const auto alone = testing_support::logits_token_by_token(m, prompt);
    Context ctx(m, {.n_ctx = 64, .n_batch = 64, .n_threads = 2});
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, true);
    ctx.decode(b);
    for (size_t i = 0; i < prompt.size(); ++i) {
      EXPECT_EQ(std::memcmp(ctx.logits(static_cast<int64_t>(i)), alone[i].data(), alone[i].size() * sizeof(float)), 0)
          << "position " << i;
    }
    testing_support::expect_interleaved_bitwise(m, prompt, alone, "interleaved");
  }
}

// Each feature, neutralised in an edited copy, moves the logits well beyond the rounding the
// llama.cpp comparison allows (2e-3 of their spread): a loader that ignored it would fail there.
TEST(GptOss, EveryFeatureReachesTheLogits) {
  const std::string src = synth_model_file("gpt-oss", "tiny", DType::kF32, 1);
  const GgufReader r(src);
  const std::vector<int32_t> prompt = long_prompt();
  const std::vector<float> base = last_logits(Model(src), prompt);
  const auto [lo, hi] = std::minmax_element(base.begin(), base.end());
  const double spread = *hi - *lo;
  const auto zeroed = [&](const std::string& suffix, float value) {
    testing_support::GgufEdit e;
    for (const GgufTensorInfo& t : r.tensors()) {
      if (!t.name.ends_with(suffix)) continue;
      testing_support::F32Tensor f = testing_support::read_f32(r, t.name);
      std::fill(f.data.begin(), f.data.end(), value);
      e.tensors[t.name] = f;
    }
    EXPECT_FALSE(e.tensors.empty()) << suffix;
    return testing_support::write_edited_gguf(src, src + ".edit.gguf", e);
  };
  // A sink of -1e30 weighs nothing: attention without sinks.
  for (const auto& [suffix, value] : std::vector<std::pair<std::string, float>>{
           {"attn_sinks.weight", -1e30f}, {"attn_q.bias", 0.0f}, {"attn_k.bias", 0.0f}, {"attn_v.bias", 0.0f},
           {"attn_output.bias", 0.0f}, {"ffn_gate_inp.bias", 0.0f}, {"ffn_gate_exps.bias", 0.0f},
           {"ffn_up_exps.bias", 0.0f}, {"ffn_down_exps.bias", 0.0f}}) {
    const double d = max_abs_diff(base, last_logits(Model(zeroed(suffix, value)), prompt));
    std::printf("[gpt-oss tiny] without %s: logits move by %.3g of their spread\n", suffix.c_str(), d / spread);
    EXPECT_GT(d, 0.02 * spread) << suffix << " barely matters: the cross-check would not see it dropped";
  }
}

TEST(GptOss, BadFilesAreRefusedByName) {
  const std::string src = synth_model_file("gpt-oss", "tiny", DType::kF32, 1);
  const auto edited = [&](const std::string& tag, testing_support::GgufEdit e) {
    return testing_support::write_edited_gguf(src, src + "." + tag + ".gguf", e);
  };
  const auto keys = [&](const std::string& tag, std::function<void(GgufWriter&)> f) {
    return edited(tag, {.metadata = std::move(f)});
  };
  testing_support::expect_load_error(keys("window0", [](GgufWriter& w) { w.set_u32("gpt-oss.attention.sliding_window", 0); }),
                                     {"gpt-oss.attention.sliding_window", "is 0"});
  testing_support::expect_load_error(
      keys("pattern", [](GgufWriter& w) {
        w.set_array("gpt-oss.attention.sliding_window_pattern", std::vector<bool>{true, false, true});
      }),
      {"sliding_window_pattern", "3 entries for 4 layers"});
  testing_support::expect_load_error(keys("gating", [](GgufWriter& w) { w.set_u32("gpt-oss.expert_gating_func", 1); }),
                                     {"gpt-oss.expert_gating_func", "is 1"});
  testing_support::expect_load_error(keys("used", [](GgufWriter& w) { w.set_u32("gpt-oss.expert_used_count", 9); }),
                                     {"layer 0", "9 experts used of 8"});
  testing_support::expect_load_error(
      edited("sinks", {.tensors = {{"blk.1.attn_sinks.weight", {{3}, {0.0f, 0.0f, 0.0f}}}}}),
      {"blk.1.attn_sinks.weight"});
  testing_support::expect_load_error(
      edited("bias", {.tensors = {{"blk.2.ffn_up_exps.bias", {{128, 7}, std::vector<float>(128 * 7)}}}}),
      {"blk.2.ffn_up_exps.bias"});
}

// An integer sliding_window_pattern is a period, as llama.cpp reads it: 4 makes layers 0-2 slide.
TEST(GptOss, IntegerWindowPatternIsAPeriod) {
  const std::string src = synth_model_file("gpt-oss", "tiny", DType::kF32, 1);
  const std::string path = testing_support::write_edited_gguf(
      src, src + ".period.gguf", {.metadata = [](GgufWriter& w) { w.set_u32("gpt-oss.attention.sliding_window_pattern", 4); }});
  const Model m(path);
  for (int64_t l = 0; l < 4; ++l) EXPECT_EQ(m.desc().layers[static_cast<size_t>(l)].attn.window, l < 3 ? 16 : 0) << l;
}

}  // namespace
}  // namespace fulgur
