// Cross-check against llama.cpp (its prebuilt CPU build from npm node-llama-cpp 3.22.1): the same
// GGUF, written by fulgur's converter from a Hugging Face checkpoint, must give the same greedy
// tokens and close logits in both engines, for the qwen3, qwen2 and llama archs and for f32, f16,
// bf16, Q8_0, Q4_0, Q4_K and Q6_K weights. The prompt goes in as token ids, so only the forward
// passes are compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "convert/gpt_oss_release_form.h"
#include "gguf_edit.h"
#include "llama/llama_compare.h"
#include "llama/llama_oracle.h"
#include "model/desc.h"
#include "model/model.h"
#include "zoo_path.h"

namespace fulgur::test {
namespace {

namespace fs = std::filesystem;

// A synthetic model (tiny shape, built-in byte-level vocabulary) through the converter: synth
// writes a Hugging Face checkpoint, `fulgur convert` turns it into the GGUF of each weight type
// both engines load. The seeds were picked among 1..40 for the largest smallest top-2 margin of
// fulgur's greedy run over the 32 steps, in f32 and Q8_0 (qwen3's random logits are flatter:
// 0.06 at best, against 0.4 for qwen2 and llama).
// A copy of a nemotron_h_moe file whose correction biases (exp_probs_b) are 0.5 * expert id:
// every router then chooses the k experts of largest id by margins of ~0.5 that no rounding can
// flip, while the routing weights (the unbiased sigmoid scores, renormalised and scaled) still
// come from the router.
std::string pin_router_choices(const std::string& path) {
  const GgufReader r(path);
  testing_support::GgufEdit edit;
  for (const GgufTensorInfo& t : r.tensors()) {
    if (!t.name.ends_with("exp_probs_b.bias")) continue;
    testing_support::F32Tensor bias{t.shape(), std::vector<float>(static_cast<size_t>(t.ne[0]))};
    for (int64_t e = 0; e < t.ne[0]; ++e) bias.data[static_cast<size_t>(e)] = 0.5f * static_cast<float>(e);
    edit.tensors[t.name] = std::move(bias);
  }
  EXPECT_FALSE(edit.tensors.empty()) << path << " has no exp_probs_b";
  return testing_support::write_edited_gguf(path, path + ".pinned.gguf", edit);
}

// A softmax router with all-zero weights: every expert ties, both engines take the k lowest ids
// (the order llama.cpp's top-k and fulgur's moe_route break ties in) with weights 1/k, so no
// rounding can pick another expert. Gemma 4's router reads the residual after attention (not a
// layer input, so min_router_gap cannot see it); its experts, fused gate-up, per-expert scales and
// the branch norms are compared with the routing held fixed.
std::string tie_softmax_routers(const std::string& path) {
  const GgufReader r(path);
  testing_support::GgufEdit edit;
  for (const GgufTensorInfo& t : r.tensors()) {
    if (!t.name.ends_with("ffn_gate_inp.weight")) continue;
    edit.tensors[t.name] = testing_support::F32Tensor{t.shape(), std::vector<float>(static_cast<size_t>(t.n_elements()))};
  }
  EXPECT_FALSE(edit.tensors.empty()) << path << " has no router";
  return testing_support::write_edited_gguf(path, path + ".tied.gguf", edit);
}

// A router with a bias of its own (ffn_gate_inp.bias: gpt-oss, whose routing is softmax over the
// chosen logits): weights zeroed and the bias spread 0.5 apart, so every row takes the same
// experts with the same weights in both engines, whatever the rounding upstream.
std::string pin_biased_routers(const std::string& path) {
  const GgufReader r(path);
  testing_support::GgufEdit edit;
  for (const GgufTensorInfo& t : r.tensors()) {
    if (t.name.ends_with("ffn_gate_inp.weight")) {
      edit.tensors[t.name] = testing_support::F32Tensor{t.shape(), std::vector<float>(static_cast<size_t>(t.n_elements()))};
    } else if (t.name.ends_with("ffn_gate_inp.bias")) {
      testing_support::F32Tensor bias{t.shape(), std::vector<float>(static_cast<size_t>(t.ne[0]))};
      for (int64_t e = 0; e < t.ne[0]; ++e) bias.data[static_cast<size_t>(e)] = 0.5f * static_cast<float>(e);
      edit.tensors[t.name] = std::move(bias);
    }
  }
  EXPECT_FALSE(edit.tensors.empty()) << path << " has no biased router";
  return testing_support::write_edited_gguf(path, path + ".pinned.gguf", edit);
}

// `min_gap` > 0 (MoE): the f32 file's routers must not come nearer a tie than this over the
// prompt and fulgur's greedy tokens (min_router_gap), or the comparison would test rounding
// luck; quantized files are compared with their router choices pinned (pin_router_choices).
// `synth_flags`: more options for synth (--mtp: the checkpoint and its conversion carry an MTP
// block).
void check_arch(const std::string& arch, int seed, const std::vector<std::pair<std::string, Tolerance>>& types,
                const std::string& dir, const std::string& shape = "tiny", double min_gap = 0.0,
                const std::string& synth_flags = "") {
  run_fulgur_ok("synth --arch " + arch + " --shape " + shape + " --seed " + std::to_string(seed) +
                    " --type f32 --tokenizer builtin " + synth_flags + " -o '" + dir + "/synth.gguf' --hf '" + dir +
                    "/hf'",
                dir);
  for (const auto& [type, tol] : types) {
    const std::string gguf = dir + "/conv_" + type + ".gguf";
    const std::string label = "synth " + arch + " " + shape + " " + type;
    run_fulgur_ok("convert '" + dir + "/hf' -o '" + gguf + "' --type " + type + " --no-progress", dir);
    if (min_gap > 0 && type != "f32") {
      check_model(label + " (router choices pinned)", pin_router_choices(gguf), kPrompt, tol, dir, true);
      continue;
    }
    if (min_gap > 0) {
      std::vector<int32_t> tokens = kPrompt;
      const std::vector<int32_t> out = fulgur_greedy(gguf, kPrompt, kSteps, 1).tokens;
      tokens.insert(tokens.end(), out.begin(), out.end() - 1);
      const double gap = min_router_gap(gguf, tokens);
      std::printf("[%s] smallest router top-k selection gap over the prompt and the steps: %.3g\n", label.c_str(), gap);
      EXPECT_GE(gap, min_gap) << label << ": a router near-tie; pick a seed without one";
    }
    check_model(label, gguf, kPrompt, tol, dir, type == "f32" || type == "q8_0");
  }
}

// qwen3's margins are small (0.06 at best over the seeds), so the K-quants, whose roundings
// differ most from llama.cpp's, run on qwen2 and llama, whose margins are 0.3 and more.
TEST_F(LlamaOracle, SyntheticQwen3ThroughConverter) {
  check_arch("qwen3", 29,
             {{"f32", kF32Tol}, {"f16", kF16Tol}, {"bf16", kBf16Tol}, {"q8_0", kQ8Tol}, {"q4_0", kQ4Tol}}, dir_);
}

TEST_F(LlamaOracle, SyntheticQwen2ThroughConverter) {
  check_arch("qwen2", 36, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}, {"q4_k", kKQuantTol}, {"q6_k", kKQuantTol}}, dir_);
}

TEST_F(LlamaOracle, SyntheticLlamaThroughConverter) {
  check_arch("llama", 36,
             {{"f32", kF32Tol}, {"f16", kF16Tol}, {"q8_0", kQ8Tol}, {"q4_k", kKQuantTol}, {"q6_k", kKQuantTol}}, dir_);
}

// RoPE as downloaded files carry it. Llama 3.1+: per-pair factors in rope_freqs, made as
// Meta's config and llama.cpp's converter make them (factor 8, low / high frequency factors 1 / 4,
// original context 8192): pairs of wavelength above 8192 positions turn 8x slower, below 2048
// stay, and the band between is blended.
std::vector<float> llama3_rope_factors(int64_t n_rot, float base) {
  constexpr double kFactor = 8.0, kLow = 1.0, kHigh = 4.0, kOrig = 8192.0;
  std::vector<float> f;
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const double wavelen = 2.0 * M_PI * std::pow(static_cast<double>(base), 2.0 * i / n_rot);
    if (wavelen < kOrig / kHigh) {
      f.push_back(1.0f);
    } else if (wavelen > kOrig / kLow) {
      f.push_back(static_cast<float>(kFactor));
    } else {
      const double smooth = (kOrig / wavelen - kLow) / (kHigh - kLow);
      f.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / kFactor + smooth)));
    }
  }
  return f;
}

// The synth llama of the test above (seed 36), written under dir.
std::string synth_llama(const std::string& dir) {
  run_fulgur_ok("synth --arch llama --shape tiny --seed 36 --type f32 --tokenizer builtin -o '" + dir +
                    "/llama.gguf'", dir);
  return dir + "/llama.gguf";
}

// n token ids below n_vocab from a fixed linear congruential sequence.
std::vector<int32_t> long_prompt(size_t n, int32_t n_vocab) {
  std::vector<int32_t> ids(n);
  uint64_t x = 12345;
  for (int32_t& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(n_vocab));
  }
  return ids;
}

// Long prompts are compared at the prompt's last position only. llama.cpp's single-token decode
// drifts from its own prompt pass with depth: on the plain synth llama, fulgur's and llama.cpp's
// last prompt positions agree to 1e-5 of the logit spread at 160, 1000 and 8300 tokens, while
// the teacher-forced steps after them differ by 0.027, 0.043 and 0.88 (llama.cpp's one-query
// attention path, likely its f16 accumulation of V; fulgur decodes bitwise as it prefills).
// Returns the largest |difference| of those logits, and checks it against tol.
double check_prompt_logits(const std::string& label, const std::string& model, const std::vector<int32_t>& prompt,
                           const Tolerance& tol, const std::string& dir) {
  const GreedyRun ours = fulgur_greedy(model, prompt, 1, kTopK);
  const GreedyRun ref = llama_greedy(model, prompt, 1, kTopK, dir);
  const LogitStats s = compare_logits(ours.logits, ref.logits);
  std::printf("[%s] last-position logits of a %zu-token prompt, fulgur vs llama.cpp: max |diff| %.3g (%.3g of "
              "spread %.3g), rms %.3g\n", label.c_str(), prompt.size(), s.max_abs, s.max_abs / s.spread, s.spread, s.rms);
  EXPECT_LE(s.max_abs, tol.max_abs_rel * s.spread) << label;
  EXPECT_LE(s.rms, tol.rms_rel * s.spread) << label;
  EXPECT_EQ(ours.tokens, ref.tokens) << label;
  return tol.max_abs_rel * s.spread;
}

// The factors matter far out for the low-frequency pairs, so the prompt reaches past 8k; the
// same comparison against the file without them is far outside the bound, so the test sees a
// loader that drops them.
TEST_F(LlamaOracle, RopeScalingLlama3FreqsBeyond8k) {
  const std::string plain = synth_llama(dir_);
  const kernels::RopeParams rope = Model(plain).desc().rope;
  const std::vector<float> factors = llama3_rope_factors(rope.n_rot, rope.freq_base);
  ASSERT_GT(*std::max_element(factors.begin(), factors.end()), 1.0f) << "no pair is scaled at this head size";
  const std::string scaled = testing_support::write_edited_gguf(
      plain, dir_ + "/llama3.gguf", {.tensors = {{"rope_freqs.weight", {{rope.n_rot / 2}, factors}}}});
  const std::vector<int32_t> prompt = long_prompt(8300, 489);
  const double bound = check_prompt_logits("llama rope_freqs (llama3)", scaled, prompt, kF32Tol, dir_);
  const LogitStats dropped = compare_logits(fulgur_greedy(plain, prompt, 1, 1).logits,
                                            llama_greedy(scaled, prompt, 1, 1, dir_).logits);
  EXPECT_GT(dropped.max_abs, 10 * bound) << "without the factors fulgur would still pass: the test is blind to them";
  check_model("llama rope_freqs (llama3), short prompt", scaled, kPrompt, kF32Tol, dir_);
}

// Linear and YaRN scaling from the file's rope.scaling keys (the factor scales every position, so
// a short prompt sees it too), and a 2000-token prompt past YaRN's original context.
TEST_F(LlamaOracle, RopeScalingLinearAndYarn) {
  for (const auto& [type, factor] : std::vector<std::pair<std::string, float>>{{"linear", 4.0f}, {"yarn", 4.0f}}) {
    const std::string plain = synth_llama(dir_);
    const std::string scaled = testing_support::write_edited_gguf(
        plain, dir_ + "/scaled.gguf", {.metadata = [&](GgufWriter& w) {
          w.set_string("llama.rope.scaling.type", type);
          w.set_f32("llama.rope.scaling.factor", factor);
          w.set_u32("llama.rope.scaling.original_context_length", 512);
        }});
    check_model("llama rope.scaling " + type, scaled, kPrompt, kF32Tol, dir_);
    check_prompt_logits("llama rope.scaling " + type, scaled, long_prompt(2000, 489), kF32Tol, dir_);
    EXPECT_NE(fulgur_greedy(plain, kPrompt, kSteps, 1).tokens, fulgur_greedy(scaled, kPrompt, kSteps, 1).tokens)
        << type << " scaling changes nothing: the test would not see it dropped";
  }
}

// Qwen3-MoE: per-expert HF tensors stacked by the converter, the router in F32. A MoE can add a
// second kind of near-tie: two experts whose router probabilities nearly tie may be chosen the
// other way by rounding, which would move that step's logits far more than an argmax flip. That
// is the likely reading (not traced expert by expert) of seed 17 in f32: one step's top-5
// logits 0.37 apart against a bound of 0.035, with every token the same. Seed 29 of
// {3, 5, 7, 11, 13, 17, 21, 29, 36} has neither kind: 32/32 greedy steps in f32 and Q8_0,
// llama.cpp's smallest top-2 margins 0.089 and 0.044, step logits within 0.018 and 0.143 of
// llama.cpp's (bounds 0.032 and 0.63).
TEST_F(LlamaOracle, SyntheticQwen3MoeThroughConverter) {
  check_arch("qwen3moe", 29, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}}, dir_);
}

// The Gated-DeltaNet hybrids (Gated DeltaNet with its conv and recurrent state, gated attention
// with partial rotary, IMROPE sections for qwen35*, the MoE with its gated shared expert): the
// checkpoint synth writes with an MTP block, converted with it (the default) and without it
// (--no-mtp), in f32 and Q8_0. The MTP block leaves the trunk's output unchanged in both engines.
// In f32 every seed agrees (~1e-4 of the spread). In Q8_0 these random hybrids amplify activation
// rounding: the same file in llama.cpp moves by 8-23% of the spread between its f32 and Q8_0
// forms, and a MoE's router turns that into other experts. fulgur's Q8_0 logits equal a double
// reference with its own activation rounding to 1e-7 of the spread on most files
// (tests/model/test_gdn.cpp), while llama.cpp's are 3-23% from that reference (and from the
// same reference with f16 block scales) on the seeds where this check fails. So the Q8_0 seeds
// are picked: seed 11 passes for qwen35 and qwen3next (30/32 steps, two allowed near-tie flips)
// with fulgur's AVX-512 and AVX2 kernels against llama.cpp's zen4 and haswell builds alike.
// qwen35moe runs in f32 only: its softmax router has no bias to pin (as pin_router_choices does
// for nemotron_h_moe), and which Q8_0 seeds pass is rounding luck that moves with the CPU. Seeds
// 19-48, fulgur avx512 against llama.cpp's haswell build: 33 and 45 pass; fulgur avx2 (whose
// bits are what an AVX2-only host computes): only 37; and 37 fails with avx512 against it; 33,
// chosen on the zen4 build with avx512, failed with avx2 or the scalar reference (0.75 of a
// 0.62 bound). The Q8_0 MoE path is compared in qwen3moe and nemotron_h_moe instead.
void check_gdn(const std::string& arch, int seed, const std::string& dir, bool q8_0 = true) {
  run_fulgur_ok("synth --arch " + arch + " --shape tiny --seed " + std::to_string(seed) +
                    " --type f32 --tokenizer builtin --mtp -o '" + dir + "/synth.gguf' --hf '" + dir + "/hf'",
                dir);
  for (const auto& [type, tol] : {std::pair{std::string("f32"), kF32Tol}, std::pair{std::string("q8_0"), kQ8Tol}}) {
    if (type == "q8_0" && !q8_0) continue;
    for (const std::string mtp : {"--mtp", "--no-mtp"}) {
      const std::string gguf = dir + "/conv_" + type + mtp + ".gguf";
      run_fulgur_ok("convert '" + dir + "/hf' -o '" + gguf + "' --type " + type + " " + mtp + " --no-progress", dir);
      check_model("synth " + arch + " tiny " + type + " " + mtp, gguf, kPrompt, tol, dir, mtp == "--mtp");
    }
  }
}

// Gemma 4 (sliding-window layers with a window of 16 and full ones with their own head dim, KV
// heads and proportional RoPE, k_eq_v, V norm, sandwich norms, GEGLU, layer scale, soft-capped
// logits; tiny-moe: the dense GEGLU beside fused gate-up experts; tiny-ple: per-layer embeddings
// and two KV-shared layers). The prompt is three times the window, and the 32 steps decode past
// it, so every sliding layer forgets cells along the way.
std::vector<int32_t> prompt_past_window() {
  std::vector<int32_t> p;
  for (int i = 0; i < 3; ++i) p.insert(p.end(), kPrompt.begin(), kPrompt.end());
  return p;
}
// Q8_0: llama.cpp's GELU rounds its input to f16 and reads a table (ggml's GGML_GELU_FP16), so
// the GEGLU activations differ from fulgur's exact tanh-GELU by up to ~1e-3 relative; with Q8_0's
// activation rounding on top, up to four teacher-forced steps of a soft-capped head may pick the
// other of a near tie (each within the logit bound, which check_model asserts).
void check_gemma4(const std::string& shape, const std::string& dir, bool tie_routers = false) {
  run_fulgur_ok("synth --arch gemma4 --shape " + shape + " --seed 1 --type f32 --tokenizer builtin -o '" + dir +
                    "/synth.gguf' --hf '" + dir + "/hf'",
                dir);
  for (const auto& [type, tol] : {std::pair{std::string("f32"), kF32Tol}, std::pair{std::string("q8_0"), kQ8Tol}}) {
    std::string gguf = dir + "/conv_" + type + ".gguf";
    run_fulgur_ok("convert '" + dir + "/hf' -o '" + gguf + "' --type " + type + " --no-progress", dir);
    if (tie_routers) gguf = tie_softmax_routers(gguf);
    check_model("synth gemma4 " + shape + " " + type + (tie_routers ? " (routers tied)" : ""), gguf,
                prompt_past_window(), tol, dir, true, type == "f32" ? 0 : 4);
  }
}
TEST_F(LlamaOracle, SyntheticGemma4ThroughConverter) { check_gemma4("tiny", dir_); }
TEST_F(LlamaOracle, SyntheticGemma4MoeThroughConverter) { check_gemma4("tiny-moe", dir_, /*tie_routers=*/true); }
TEST_F(LlamaOracle, SyntheticGemma4PerLayerEmbeddingsThroughConverter) { check_gemma4("tiny-ple", dir_); }

// gpt-oss (llama.cpp's `gpt-oss` arch): sliding layers with a window of 16 beside full ones,
// attention sinks, q/k/v/o biases, YaRN, a router with a bias, experts chosen on raw logits and
// weighted by the softmax over the chosen ones, biased experts with the clamped SwiGLU, untied
// head. f32: synth's Hugging Face export through the converter (transposed, interleaved experts:
// convert/gpt_oss_arch.h); MXFP4 experts as released files have them: synth's GGUF (the released
// checkpoints' form through the converter: SyntheticGptOssReleasedMxfp4ThroughConverter). The prompt is three windows long and the steps decode past it. tests/model/test_gpt_oss.cpp shows that neutralising any of
// these features moves the logits far beyond the bounds here. f32 (seed 1): 32/32 greedy steps,
// the prompt's logits 5.5e-4 of their spread from llama.cpp's (llama.cpp's two attention paths:
// 5.6e-4 from each other). With MXFP4 experts unpinned, one teacher-forced step's top-5 logits
// were 0.88 apart against a bound of 0.80 (the prompt's logits within 3.9e-3 of the spread), most
// likely a router choice flipped by rounding (not traced expert by expert); so MXFP4 is compared
// with the routers pinned (pin_biased_routers): 31/32 steps, one allowed near-tie, prompt logits
// 3.9e-3 of the spread apart (llama.cpp's own two paths: 3.9e-3). The routing is compared in f32.
TEST_F(LlamaOracle, SyntheticGptOss) {
  for (const auto& [type, tol] : {std::pair{std::string("f32"), kF32Tol}, std::pair{std::string("mxfp4"), kQ8Tol}}) {
    std::string gguf = dir_ + "/gpt_oss_" + type + ".gguf";
    if (type == "f32") {
      run_fulgur_ok("synth --arch gpt-oss --shape tiny --seed 1 --type f32 --tokenizer builtin -o '" + dir_ +
                        "/synth.gguf' --hf '" + dir_ + "/hf'",
                    dir_);
      run_fulgur_ok("convert '" + dir_ + "/hf' -o '" + gguf + "' --type f32 --no-progress", dir_);
    } else {
      run_fulgur_ok("synth --arch gpt-oss --shape tiny --seed 1 --type mxfp4 --tokenizer builtin -o '" + gguf + "'", dir_);
      gguf = pin_biased_routers(gguf);
    }
    check_model("synth gpt-oss tiny " + type + (type == "mxfp4" ? " (routers pinned)" : ""), gguf,
                prompt_past_window(), tol, dir_, true, type == "f32" ? 0 : 2);
  }
}

// The released checkpoints' form through the converter: synth's float checkpoint (seed 1) with
// its experts rounded to MXFP4 and stored as OpenAI stores them (X_blocks / X_scales,
// tests/convert/gpt_oss_release_form.h), converted with --type f32, which keeps the experts
// MXFP4; routers pinned as for synth's MXFP4 file above, the same bounds.
TEST_F(LlamaOracle, SyntheticGptOssReleasedMxfp4ThroughConverter) {
  run_fulgur_ok("synth --arch gpt-oss --shape tiny --seed 1 --type f32 --tokenizer builtin -o '" + dir_ +
                    "/synth.gguf' --hf '" + dir_ + "/hf'",
                dir_);
  write_gpt_oss_release_forms(dir_ + "/hf", dir_ + "/exact-hf", dir_ + "/mxfp4-hf");
  const std::string gguf = dir_ + "/released_mxfp4.gguf";
  run_fulgur_ok("convert '" + dir_ + "/mxfp4-hf' -o '" + gguf + "' --type f32 --no-progress", dir_);
  for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.3.ffn_down_exps.weight"}) {
    EXPECT_EQ(GgufReader(gguf).tensor(name).type, DType::kMXFP4) << name;
  }
  check_model("gpt-oss tiny, released MXFP4 form converted (routers pinned)", pin_biased_routers(gguf),
              prompt_past_window(), kQ8Tol, dir_, true, 2);
}

TEST_F(LlamaOracle, SyntheticQwen35ThroughConverter) { check_gdn("qwen35", 11, dir_); }
TEST_F(LlamaOracle, SyntheticQwen35MoeThroughConverter) { check_gdn("qwen35moe", 33, dir_, /*q8_0=*/false); }
TEST_F(LlamaOracle, SyntheticQwen3NextThroughConverter) { check_gdn("qwen3next", 11, dir_); }

// The zoo's trained Qwen3.5-form hybrid with its MTP block (a GGUF, f32).
TEST_F(LlamaOracle, ZooQwen35Code) {
  const std::string gguf = zoo_dir() + "/zoo-qwen35-code/zoo-qwen35-code-f32.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << gguf << " not found (set FULGUR_ZOO_DIR to the zoo folder)";
  const std::string ids = run_fulgur_ok(
      "tokenize -m '" + gguf + "' --json -p 'import os\nimport sys\n\n\ndef read_lines(path):\n    with open(path) as f:\n'",
      dir_);
  const std::vector<int32_t> prompt = nlohmann::json::parse(ids).at("ids").get<std::vector<int32_t>>();
  ASSERT_GE(prompt.size(), 8u);
  check_model("zoo-qwen35-code f32", gguf, prompt, kF32Tol, dir_, true);
}

// Nemotron-H (Mamba2, attention without RoPE, ReLU² MLP) and Nemotron-H-MoE (sigmoid router with
// its correction bias, ReLU² experts, shared expert; tiny-latent: the experts in a latent space;
// tiny-puzzle: per-layer expert widths and experts used, latent): synth's checkpoint through
// the converter, f32 and Q8_0 (the synth GGUF is the converted one, byte for byte:
// tests/convert). Sigmoid scores of 16 experts plus a bias lie close together, so router
// near-ties (see qwen3moe above) are common: tiny-latent seed 1 in Q8_0 chose another expert
// for one row at a selection gap of 8.5e-5, and from that step on 9 of 32 steps differed, with
// step logits 1.25 apart (bound 0.82). The margin-aware rule: in f32 the engines' router scores
// differ by ~1e-6, and each file's smallest router gap over the prompt and the steps
// (min_router_gap, in fulgur) must be at least 3e-4; the seeds were picked among 1..28 for it
// (f32 gaps: tiny seed 5 7.4e-4, tiny-latent seed 7 2.8e-3, tiny-puzzle seed 13 5.8e-4). In
// Q8_0 the quantized activations move the scores by ~1e-2, beyond any gap a seed offers
// (tiny-puzzle seed 13: gap 1.1e-3, and the prompt's logits 0.45 of their spread apart), so
// Q8_0 files are compared with their router choices pinned (pin_router_choices: then 1.2e-2
// of the spread, like the dense nemotron_h file); the choice itself is compared in f32.
constexpr double kMinRouterGap = 3e-4;

// nemotron_h: seed 2, 32/32 greedy steps in f32 and Q8_0 with fulgur's avx512 and avx2 kernels
// against llama.cpp's zen4 and haswell builds (seed 1, used before, had three Q8_0 near-tie flips
// with avx2, one more than allowed; seeds 4 and 8 fail everywhere).
TEST_F(LlamaOracle, SyntheticNemotronHThroughConverter) { check_arch("nemotron_h", 2, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}}, dir_); }

TEST_F(LlamaOracle, SyntheticNemotronHMoeThroughConverter) {
  check_arch("nemotron_h_moe", 5, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}}, dir_, "tiny", kMinRouterGap);
}

// With its MTP block (llama.cpp's NemotronH MTP export layout: blk.6 with the nextn tensors, an
// attention and a MoE; block_count 7, nextn_predict_layers 1): llama.cpp loads the file and its
// trunk gives fulgur's tokens and logits (the same trunk weights as above: synth seeds each
// tensor by its name, so the router gap holds too).
TEST_F(LlamaOracle, SyntheticNemotronHMoeWithMtpThroughConverter) {
  check_arch("nemotron_h_moe", 5, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}}, dir_, "tiny", kMinRouterGap, "--mtp");
  const GgufReader r(dir_ + "/conv_f32.gguf");
  EXPECT_EQ(r.get_u32("nemotron_h_moe.nextn_predict_layers"), 1u);
  EXPECT_EQ(r.get_u32("nemotron_h_moe.block_count"), 7u);
}

TEST_F(LlamaOracle, SyntheticNemotronHLatentMoeThroughConverter) {
  // Seed 2, used before, had three Q8_0 near-tie flips with fulgur's avx2 kernels against
  // llama.cpp's zen4 build; seeds 3, 4, 6, 7 and 11 of 1..12 pass with avx512 and avx2 against
  // its zen4 and haswell builds, and 7 has the widest router gap of them.
  check_arch("nemotron_h_moe", 7, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}}, dir_, "tiny-latent", kMinRouterGap);
}

TEST_F(LlamaOracle, SyntheticNemotronHPuzzleThroughConverter) {
  check_arch("nemotron_h_moe", 13, {{"f32", kF32Tol}, {"q8_0", kQ8Tol}}, dir_, "tiny-puzzle", kMinRouterGap);
}

// The zoo's trained Qwen3 (Python-code LM, 4096-token vocabulary) converted by fulgur, f32.
TEST_F(LlamaOracle, ZooQwen3Code) {
  const std::string zoo = zoo_dir() + "/zoo-qwen3-code";
  if (!fs::exists(zoo + "/config.json"))
    GTEST_SKIP() << zoo << " not found (set FULGUR_ZOO_DIR to the zoo folder)";
  const std::string gguf = dir_ + "/zoo.gguf";
  run_fulgur_ok("convert '" + zoo + "' -o '" + gguf + "' --type f32 --no-progress", dir_);
  const std::string ids = run_fulgur_ok(
      "tokenize -m '" + gguf + "' --json -p 'import os\nimport sys\n\n\ndef read_lines(path):\n    with open(path) as f:\n'",
      dir_);
  ASSERT_FALSE(ids.empty());
  const std::vector<int32_t> prompt = nlohmann::json::parse(ids).at("ids").get<std::vector<int32_t>>();
  ASSERT_GE(prompt.size(), 8u);
  check_model("zoo-qwen3-code f32", gguf, prompt, kF32Tol, dir_, true);
}

}  // namespace
}  // namespace fulgur::test
