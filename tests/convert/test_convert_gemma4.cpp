// The gemma4 converter: `fulgur synth` (the plan on a seeded source) against `fulgur convert` of
// its Hugging Face export, tensor for tensor; the keys and the layout checked by hand against
// transformers' Gemma 4 and llama.cpp's loader (independently of the plan code both files
// share): per-layer head sizes and KV heads, no attn_v on k_eq_v full layers, no K/V on
// KV-shared layers, the computed rope_freqs, unshifted norms, the MoE and per-layer-embedding
// tensors; the multimodal checkpoint's towers left out; the published 26B-A4B / 31B layer shapes
// as planned (without writing their multi-GB files); and every bad input named.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/hf_export.h"
#include "convert/safetensors.h"
#include "convert/synth_convert_fixture.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "synth/synth_configs.h"
#include "tokenizer/builtin_vocab.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using Gemma4ConvertTest = test::SynthConvertTest;
using test::drop_tensor;
using test::expect_same_gguf;
using test::tensor_named;
using test::values_of;

constexpr const char* kLm = "model.language_model.";

std::vector<int64_t> shape(std::initializer_list<int64_t> s) { return s; }

TEST_F(Gemma4ConvertTest, SynthEqualsConvertOfItsHfExport) {
  for (const char* s : {"tiny", "tiny-moe", "tiny-ple"}) {
    for (const DType type : {DType::kF32, DType::kQ8_0, DType::kQ4_K}) {
      // q4_k (slow) once, on the shape with per-layer embeddings (their own roles).
      if (type == DType::kQ4_K && std::string(s) != "tiny-ple") continue;
      SCOPED_TRACE(std::string(s) + " " + std::string(dtype_name(type)));
      const std::string synth_path = synth("gemma4", s, type, s);
      expect_same_gguf(synth_path, convert(path(std::string(s) + "-hf"), type));
      fs::remove_all(path(std::string(s) + "-hf"));
    }
  }
}

TEST_F(Gemma4ConvertTest, TinyKeysAndLayout) {
  synth("gemma4", "tiny", DType::kQ8_0, "t");
  const GgufReader r(convert(path("t-hf"), DType::kF32));
  const std::string a = "gemma4.";
  EXPECT_EQ(r.get_string("general.architecture"), "gemma4");
  EXPECT_EQ(r.get_u32(a + "block_count"), 6u);
  EXPECT_EQ(r.get_u32(a + "embedding_length"), 256u);
  EXPECT_EQ(r.get_u32(a + "feed_forward_length"), 512u);
  EXPECT_EQ(r.get_u32(a + "attention.head_count"), 4u);
  // Sliding layers 2 KV heads of 32, full layers (3, 5) 1 KV head of 64.
  EXPECT_EQ(r.get(a + "attention.head_count_kv").to_string(), "[2, 2, 2, 1, 2, 1]");
  EXPECT_EQ(r.get(a + "attention.sliding_window_pattern").to_string(), "[true, true, true, false, true, false]");
  EXPECT_EQ(r.get_u32(a + "attention.key_length"), 64u);
  EXPECT_EQ(r.get_u32(a + "attention.value_length"), 64u);
  EXPECT_EQ(r.get_u32(a + "attention.key_length_swa"), 32u);
  EXPECT_EQ(r.get_u32(a + "attention.value_length_swa"), 32u);
  EXPECT_EQ(r.get_u32(a + "attention.sliding_window"), 16u);
  EXPECT_EQ(r.get_u32(a + "attention.shared_kv_layers"), 0u);
  EXPECT_EQ(r.get_u32(a + "embedding_length_per_layer_input"), 0u);
  EXPECT_FLOAT_EQ(r.get_f32(a + "final_logit_softcapping"), 30.0f);
  EXPECT_FLOAT_EQ(r.get_f32(a + "rope.freq_base"), 1e6f);
  EXPECT_FLOAT_EQ(r.get_f32(a + "rope.freq_base_swa"), 1e4f);
  EXPECT_EQ(r.get_u32(a + "rope.dimension_count"), 64u);
  EXPECT_EQ(r.get_u32(a + "rope.dimension_count_swa"), 32u);
  EXPECT_FALSE(r.has(a + "expert_count"));
  EXPECT_FALSE(r.find_tensor("output.weight"));  // tied
  EXPECT_FALSE(r.find_tensor("per_layer_token_embd.weight"));

  // Proportional RoPE on a quarter of the 64-wide full head: 8 of 32 pairs rotate.
  const std::vector<float> freqs = values_of(r.tensor("rope_freqs.weight"));
  ASSERT_EQ(freqs.size(), 32u);
  for (size_t i = 0; i < freqs.size(); ++i) EXPECT_EQ(freqs[i], i < 8 ? 1.0f : 1e30f) << i;

  for (int i = 0; i < 6; ++i) {
    const bool full = i == 3 || i == 5;
    const std::string g = "blk." + std::to_string(i) + ".";
    SCOPED_TRACE(g);
    const int64_t dh = full ? 64 : 32, kv = full ? 1 : 2;
    EXPECT_EQ(r.tensor(g + "attn_q.weight").shape(), shape({256, 4 * dh}));
    EXPECT_EQ(r.tensor(g + "attn_k.weight").shape(), shape({256, kv * dh}));
    EXPECT_EQ(r.find_tensor(g + "attn_v.weight") != nullptr, !full);  // k_eq_v full layers: V = K
    EXPECT_EQ(r.tensor(g + "attn_output.weight").shape(), shape({4 * dh, 256}));
    EXPECT_EQ(r.tensor(g + "attn_q_norm.weight").shape(), shape({dh}));
    EXPECT_EQ(r.tensor(g + "attn_k_norm.weight").shape(), shape({dh}));
    for (const char* n : {"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"}) {
      EXPECT_EQ(r.tensor(g + n + ".weight").shape(), shape({256})) << n;
    }
    EXPECT_EQ(r.tensor(g + "ffn_gate.weight").shape(), shape({256, 512}));
    EXPECT_EQ(r.tensor(g + "ffn_down.weight").shape(), shape({512, 256}));
    EXPECT_EQ(r.tensor(g + "layer_output_scale.weight").shape(), shape({1}));
    EXPECT_FALSE(r.find_tensor(g + "ffn_gate_inp.weight"));
  }

  // Norm gains as HF holds them (Gemma4RMSNorm multiplies by w: no +1), layer_scalar as is.
  const Checkpoint ck(path("t-hf"));
  EXPECT_EQ(values_of(r.tensor("blk.2.attn_norm.weight")), ck.to_f32(std::string(kLm) + "layers.2.input_layernorm.weight"));
  EXPECT_EQ(values_of(r.tensor("blk.2.ffn_norm.weight")), ck.to_f32(std::string(kLm) + "layers.2.pre_feedforward_layernorm.weight"));
  EXPECT_EQ(values_of(r.tensor("blk.5.layer_output_scale.weight")), ck.to_f32(std::string(kLm) + "layers.5.layer_scalar"));
  EXPECT_EQ(values_of(r.tensor("output_norm.weight")), ck.to_f32(std::string(kLm) + "norm.weight"));
  EXPECT_FALSE(ck.has(std::string(kLm) + "layers.3.self_attn.v_proj.weight"));
  EXPECT_FALSE(ck.has("rope_freqs.weight"));  // computed, not a checkpoint tensor

  // In a quantized file the norms, scales and rope_freqs stay F32.
  const GgufReader q(path("t.gguf"));
  for (const char* n : {"rope_freqs.weight", "blk.0.attn_q_norm.weight", "blk.0.layer_output_scale.weight"}) {
    EXPECT_EQ(q.tensor(n).type, DType::kF32) << n;
  }
  EXPECT_EQ(q.tensor("blk.0.attn_q.weight").type, DType::kQ8_0);
}

TEST_F(Gemma4ConvertTest, MoeKeysAndTensors) {
  synth("gemma4", "tiny-moe", DType::kQ8_0, "m");
  const GgufReader r(convert(path("m-hf"), DType::kF32));
  EXPECT_EQ(r.get_u32("gemma4.expert_count"), 8u);
  EXPECT_EQ(r.get_u32("gemma4.expert_used_count"), 2u);
  EXPECT_EQ(r.get_u32("gemma4.expert_feed_forward_length"), 128u);
  EXPECT_EQ(r.get_u32("gemma4.feed_forward_length"), 512u);  // the MLP beside the experts
  const std::string g = "blk.4.";
  EXPECT_EQ(r.tensor(g + "ffn_gate_inp.weight").shape(), shape({256, 8}));
  EXPECT_EQ(r.tensor(g + "ffn_gate_inp.scale").shape(), shape({256}));
  EXPECT_EQ(r.tensor(g + "ffn_down_exps.scale").shape(), shape({8}));
  EXPECT_EQ(r.tensor(g + "ffn_gate_up_exps.weight").shape(), shape({256, 256, 8}));
  EXPECT_EQ(r.tensor(g + "ffn_down_exps.weight").shape(), shape({128, 256, 8}));
  for (const char* n : {"pre_ffw_norm_2", "post_ffw_norm_1", "post_ffw_norm_2", "ffn_norm", "post_ffw_norm"}) {
    EXPECT_EQ(r.tensor(g + n + ".weight").shape(), shape({256})) << n;
  }
  EXPECT_TRUE(r.find_tensor(g + "ffn_gate.weight"));
  // Fused experts are the HF bytes unchanged ([N, 2F, E] = {E, 2F, N}).
  const Checkpoint ck(path("m-hf"));
  EXPECT_EQ(values_of(r.tensor(g + "ffn_gate_up_exps.weight")), ck.to_f32(std::string(kLm) + "layers.4.experts.gate_up_proj"));
  EXPECT_EQ(values_of(r.tensor(g + "ffn_down_exps.scale")), ck.to_f32(std::string(kLm) + "layers.4.router.per_expert_scale"));
  // Router, its scales and the per-expert scale stay F32 in a quantized file.
  const GgufReader q(path("m.gguf"));
  for (const char* n : {"ffn_gate_inp.weight", "ffn_gate_inp.scale", "ffn_down_exps.scale"}) {
    EXPECT_EQ(q.tensor(g + n).type, DType::kF32) << n;
  }
  EXPECT_EQ(q.tensor(g + "ffn_gate_up_exps.weight").type, DType::kQ8_0);
}

TEST_F(Gemma4ConvertTest, PerLayerEmbeddingsAndKvSharing) {
  synth("gemma4", "tiny-ple", DType::kQ4_K, "p");
  const GgufReader r(convert(path("p-hf"), DType::kF32));
  const int64_t V = r.tensor("token_embd.weight").shape()[1];
  EXPECT_EQ(r.get_u32("gemma4.embedding_length_per_layer_input"), 32u);
  EXPECT_EQ(r.get_u32("gemma4.attention.shared_kv_layers"), 2u);
  EXPECT_EQ(r.get(std::string("gemma4.feed_forward_length")).to_string(), "[512, 512, 512, 512, 1024, 1024]");
  EXPECT_EQ(r.tensor("per_layer_token_embd.weight").shape(), shape({6 * 32, V}));
  EXPECT_EQ(r.tensor("per_layer_model_proj.weight").shape(), shape({256, 6 * 32}));
  EXPECT_EQ(r.tensor("per_layer_proj_norm.weight").shape(), shape({32}));
  for (int i = 0; i < 6; ++i) {
    const std::string g = "blk." + std::to_string(i) + ".";
    SCOPED_TRACE(g);
    EXPECT_EQ(r.tensor(g + "inp_gate.weight").shape(), shape({256, 32}));
    EXPECT_EQ(r.tensor(g + "proj.weight").shape(), shape({32, 256}));
    EXPECT_EQ(r.tensor(g + "post_norm.weight").shape(), shape({256}));
    const bool shared = i >= 4;
    EXPECT_EQ(r.find_tensor(g + "attn_k.weight") != nullptr, !shared);
    EXPECT_EQ(r.find_tensor(g + "attn_k_norm.weight") != nullptr, !shared);
    EXPECT_EQ(r.find_tensor(g + "attn_v.weight") != nullptr, i == 0 || i == 1 || i == 2);
    EXPECT_EQ(r.tensor(g + "ffn_up.weight").shape(), shape({256, shared ? 1024 : 512}));
  }
  // Q4_K_M: the per-layer table is a token embedding (Q6_K; its rows of 192 do not fill 256-value
  // blocks, so Q8_0), the model projection is left as the converter wrote it (F16), as
  // llama-quantize does.
  const GgufReader q(path("p.gguf"));
  EXPECT_EQ(q.tensor("per_layer_token_embd.weight").type, DType::kQ8_0);
  EXPECT_EQ(q.tensor("per_layer_model_proj.weight").type, DType::kF16);
  EXPECT_EQ(q.tensor("blk.0.inp_gate.weight").type, DType::kQ4_K);
}

// The multimodal checkpoint: towers are left out (one log line), and so are the K/V tensors a
// KV-shared layer may still carry (transformers ignores them on load). The text-only class with
// model.* names converts to the same file.
TEST_F(Gemma4ConvertTest, ConditionalGenerationExtrasAndCausalLmForm) {
  synth("gemma4", "tiny-ple", DType::kF32, "p");
  const std::string extras = with_tensors(path("p-hf"), "extras", [](std::vector<HfTensor>& ts) {
    ts.push_back({"model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight", {8, 4}, std::vector<float>(32, 0.5f)});
    ts.push_back({"model.embed_vision.embedding_projection.weight", {256, 8}, std::vector<float>(256 * 8, 0.25f)});
    ts.push_back({"model.audio_tower.layers.0.norm.weight", {8}, std::vector<float>(8, 1.0f)});
    ts.push_back({std::string(kLm) + "layers.5.self_attn.k_proj.weight", {64, 256}, std::vector<float>(64 * 256, 0.1f)});
    ts.push_back({std::string(kLm) + "layers.4.self_attn.v_proj.weight", {64, 256}, std::vector<float>(64 * 256, 0.1f)});
    ts.push_back({std::string(kLm) + "layers.4.self_attn.k_norm.weight", {32}, std::vector<float>(32, 1.0f)});
  });
  expect_same_gguf(path("p.gguf"), convert(extras, DType::kF32, "extras.gguf"));

  std::string causal = with_tensors(path("p-hf"), "causal", [](std::vector<HfTensor>& ts) {
    for (HfTensor& t : ts) t.name = "model." + t.name.substr(std::string(kLm).size());
  });
  causal = with_config(causal, "causal-flat", [](Json& c) {
    Json text = c["text_config"];
    text["architectures"] = {"Gemma4ForCausalLM"};
    text["model_type"] = "gemma4_text";
    c = text;
  });
  expect_same_gguf(path("p.gguf"), convert(causal, DType::kF32, "causal.gguf"));
  // An extra tensor of the text model is still an error.
  expect_failure(with_tensors(path("p-hf"), "stray", [](std::vector<HfTensor>& ts) {
                   ts.push_back({std::string(kLm) + "layers.3.self_attn.v_proj.weight", {64, 256}, std::vector<float>(64 * 256)});
                 }),
                 {"unexpected tensor", "layers.3.self_attn.v_proj.weight"});
}

TEST_F(Gemma4ConvertTest, BadInputsAreNamed) {
  synth("gemma4", "tiny", DType::kF32, "t");
  synth("gemma4", "tiny-ple", DType::kF32, "p");
  const std::string t = path("t-hf"), p = path("p-hf");
  auto text = [](const std::function<void(Json&)>& edit) { return [edit](Json& c) { edit(c["text_config"]); }; };
  expect_failure(with_config(t, "window", text([](Json& c) { c["sliding_window"] = 0; })), {"sliding_window", "is 0"});
  expect_failure(with_config(t, "pattern", text([](Json& c) { c["layer_types"].erase(5); })),
                 {"layer_types has 5 entries for num_hidden_layers 6"});
  expect_failure(with_config(t, "kind", text([](Json& c) { c["layer_types"][1] = "chunked_attention"; })),
                 {"layer_types[1]", "chunked_attention"});
  expect_failure(with_config(p, "shared-all", text([](Json& c) { c["num_kv_shared_layers"] = 6; })),
                 {"num_kv_shared_layers is 6", "fewer than num_hidden_layers 6"});
  // KV-owning layers 0..3 end F S: llama.cpp would map the shared layers to the wrong caches.
  expect_failure(with_config(p, "shared-end", text([](Json& c) {
                   c["layer_types"] = {"sliding_attention", "sliding_attention", "full_attention",
                                       "sliding_attention", "sliding_attention", "full_attention"};
                 })),
                 {"num_kv_shared_layers 2", "sliding_attention then a full_attention"});
  expect_failure(with_config(t, "rope", text([](Json& c) { c["rope_parameters"]["full_attention"]["rope_type"] = "default"; })),
                 {"full_attention.rope_type", "proportional"});
  expect_failure(with_config(t, "factor", text([](Json& c) {
                   c["rope_parameters"]["full_attention"]["partial_rotary_factor"] = 1.5;
                 })),
                 {"partial_rotary_factor 1.5"});
  expect_failure(with_config(t, "act", text([](Json& c) { c["hidden_activation"] = "silu"; })), {"hidden_activation", "silu"});
  expect_failure(with_config(t, "global", text([](Json& c) { c.erase("global_head_dim"); })), {"global_head_dim"});
  expect_failure(with_config(p, "ple-rows", text([](Json& c) { c["vocab_size_per_layer_input"] = 7; })),
                 {"vocab_size_per_layer_input 7"});
  expect_failure(with_config(t, "moe", text([](Json& c) { c["enable_moe_block"] = true; })), {"num_experts"});
  // The checkpoint must hold what the config says: without k_eq_v a full layer has
  // num_key_value_heads K heads and a v_proj.
  expect_failure(with_config(t, "no-keqv", text([](Json& c) { c["attention_k_eq_v"] = false; })),
                 {"layers.3.self_attn.k_proj.weight", "has shape [64, 256]", "[128, 256]"});
  expect_failure(with_tensors(t, "no-scalar", [](std::vector<HfTensor>& ts) { drop_tensor(ts, std::string(kLm) + "layers.1.layer_scalar"); }),
                 {"missing tensor", "layers.1.layer_scalar"});
}

// The real models' layer shapes, planned from the synth configs without writing their files
// (Q8_0: ~2 GB for 31b-l4, ~5 GB for 26b-a4b-l6); expected shapes from the published dims.
TEST(Gemma4RealShapes, PlansTheReleasedLayerDims) {
  const Vocab vocab = builtin_byte_vocab();
  const int64_t V = static_cast<int64_t>(vocab.tokens.size());
  auto plan = [&](const char* shape, GgufWriter& w) {
    const Json config = synth_config("gemma4", shape, V, vocab);
    return plan_hf_model(HfConfig(config, "synth config"), {}, w, MtpMode::kAuto);
  };
  auto find = [](const ArchPlan& p, const std::string& name) -> const TensorPlan* {
    for (const TensorPlan& tp : p.tensors) {
      if (tp.gguf_name == name) return &tp;
    }
    return nullptr;
  };
  auto expect_shape = [&](const ArchPlan& p, const std::string& name, std::vector<int64_t> want) {
    const TensorPlan* tp = find(p, name);
    ASSERT_NE(tp, nullptr) << name;
    EXPECT_EQ(tp->shape, want) << name;
  };
  {
    GgufWriter w;
    const ArchPlan p = plan("26b-a4b-l6", w);
    EXPECT_EQ(p.gguf_arch, "gemma4");
    EXPECT_EQ(p.n_layer, 6);
    expect_shape(p, "rope_freqs.weight", {256});
    expect_shape(p, "blk.0.attn_q.weight", {2816, 16 * 256});
    expect_shape(p, "blk.0.attn_k.weight", {2816, 8 * 256});
    expect_shape(p, "blk.0.attn_v.weight", {2816, 8 * 256});
    expect_shape(p, "blk.5.attn_q.weight", {2816, 16 * 512});
    expect_shape(p, "blk.5.attn_k.weight", {2816, 2 * 512});
    EXPECT_EQ(find(p, "blk.5.attn_v.weight"), nullptr);
    expect_shape(p, "blk.5.attn_output.weight", {16 * 512, 2816});
    expect_shape(p, "blk.3.ffn_gate.weight", {2816, 2112});
    expect_shape(p, "blk.3.ffn_gate_inp.weight", {2816, 128});
    expect_shape(p, "blk.3.ffn_gate_up_exps.weight", {2816, 2 * 704, 128});
    expect_shape(p, "blk.3.ffn_down_exps.weight", {704, 2816, 128});
    expect_shape(p, "blk.3.ffn_down_exps.scale", {128});
    int64_t n = 0;
    for (const TensorPlan& tp : p.tensors) n += tp.n_elements();
    EXPECT_GT(n, int64_t{4'600'000'000});  // 6 of 30 layers: ~0.78 G parameters each
  }
  {
    GgufWriter w;
    const ArchPlan p = plan("31b-l4", w);
    EXPECT_EQ(p.n_layer, 4);
    expect_shape(p, "blk.0.attn_q.weight", {5376, 32 * 256});
    expect_shape(p, "blk.0.attn_k.weight", {5376, 16 * 256});
    expect_shape(p, "blk.3.attn_q.weight", {5376, 32 * 512});
    expect_shape(p, "blk.3.attn_k.weight", {5376, 4 * 512});
    EXPECT_EQ(find(p, "blk.3.attn_v.weight"), nullptr);
    expect_shape(p, "blk.2.ffn_up.weight", {5376, 21504});
    expect_shape(p, "blk.2.ffn_down.weight", {21504, 5376});
    EXPECT_EQ(find(p, "blk.2.ffn_gate_inp.weight"), nullptr);
  }
}

}  // namespace
}  // namespace fulgur
