// The converter's MoE and hybrid targets (qwen3moe, nemotron_h, nemotron_h_moe incl. Puzzle)
// and the plan machinery they use (stacked experts, slices of fused tensors, value transforms,
// reshapes): `fulgur synth` (the converter's plan on a seeded source) against `fulgur convert`
// of the synth's Hugging Face export, tensor for tensor and key for key; the GGUF layout against
// the HF tensors checked by hand (independently of the plan code both share); and every bad
// input named, with no output left behind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/hf_export.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "convert/synth_convert_fixture.h"
#include "convert/tiny_checkpoint.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "synth/synth.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using ArchConvertTest = test::SynthConvertTest;
using test::drop_tensor;
using test::expect_same_gguf;
using test::tensor_named;
using test::values_of;

struct Case {
  const char* arch;
  const char* shape;
};

// Every synth shape small enough for a test, in the types with distinct code paths (float,
// block quantization, the q4_k recipe with Q6_K roles and Q8_0 fallbacks). The dense archs are
// here too: the llama q/k permutation is inverted by the synth's HF export.
TEST_F(ArchConvertTest, SynthEqualsConvertOfItsHfExport) {
  const Case cases[] = {{"qwen3", "tiny"},      {"qwen2", "tiny"},           {"llama", "tiny"},
                        {"qwen3moe", "tiny"},   {"nemotron_h", "tiny"},      {"nemotron_h_moe", "tiny"},
                        {"nemotron_h_moe", "tiny-puzzle"}};
  for (const Case& c : cases) {
    // q4_k (slow to quantize) once, on the hybrid whose attn_v / ffn_down are counted over the
    // layers that have them (the expert roles are unit-tested in QuantPolicyAndFallbacks).
    const bool q4k = std::string(c.arch) == "nemotron_h";
    for (const DType type : {DType::kF32, DType::kQ8_0, DType::kQ4_K}) {
      if (type == DType::kQ4_K && !q4k) continue;
      SCOPED_TRACE(std::string(c.arch) + " " + c.shape + " " + std::string(dtype_name(type)));
      const std::string name = std::string(c.arch) + "-" + c.shape;
      const std::string synth_path = synth(c.arch, c.shape, type, name);
      expect_same_gguf(synth_path, convert(path(name + "-hf"), type));
      fs::remove_all(path(name + "-hf"));
    }
  }
}

// Rows are drawn, converted and quantized in parallel; the bytes must not depend on how many
// threads did it.
TEST_F(ArchConvertTest, ThreadCountDoesNotChangeBytes) {
  const std::string one = synth("nemotron_h_moe", "tiny", DType::kQ8_0, "one", 1);
  expect_same_gguf(one, synth("nemotron_h_moe", "tiny", DType::kQ8_0, "three", 3));
  expect_same_gguf(convert(path("one-hf"), DType::kQ8_0, "c1.gguf", 1), convert(path("one-hf"), DType::kQ8_0, "c3.gguf", 3));
}

TEST_F(ArchConvertTest, Qwen3MoeKeysAndStackedExperts) {
  synth("qwen3moe", "tiny", DType::kQ8_0, "m");
  const GgufReader r(convert(path("m-hf"), DType::kF32));
  EXPECT_EQ(r.get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(r.get_u32("qwen3moe.expert_count"), 16u);
  EXPECT_EQ(r.get_u32("qwen3moe.expert_used_count"), 4u);
  EXPECT_EQ(r.get_u32("qwen3moe.expert_feed_forward_length"), 128u);
  EXPECT_EQ(r.get_u32("qwen3moe.feed_forward_length"), 512u);  // intermediate_size, as llama.cpp writes it
  EXPECT_EQ(r.tensor("blk.1.ffn_gate_exps.weight").shape(), (std::vector<int64_t>{256, 128, 16}));
  EXPECT_EQ(r.tensor("blk.1.ffn_down_exps.weight").shape(), (std::vector<int64_t>{128, 256, 16}));
  EXPECT_EQ(r.tensor("blk.1.ffn_gate_inp.weight").shape(), (std::vector<int64_t>{256, 16}));
  EXPECT_FALSE(r.find_tensor("blk.0.ffn_gate.weight"));
  EXPECT_FALSE(r.find_tensor("output.weight"));  // tied
  // Expert j of a stacked tensor is HF experts.j, bytes in order (checked here by hand, not by
  // the plan code that wrote both files).
  const Checkpoint ck(path("m-hf"));
  for (const char* proj : {"gate", "up", "down"}) {
    const std::vector<float> got = values_of(r.tensor(std::string("blk.1.ffn_") + proj + "_exps.weight"));
    for (int j = 0; j < 16; ++j) {
      const std::vector<float> want = ck.to_f32("model.layers.1.mlp.experts." + std::to_string(j) + "." + proj + "_proj.weight");
      ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + j * want.size())) << proj << " expert " << j;
    }
  }
  // The router stays F32 whatever the type (llama.cpp's converter and quantizer both keep it).
  const GgufReader q(path("m.gguf"));
  EXPECT_EQ(q.tensor("blk.0.ffn_gate_inp.weight").type, DType::kF32);
  EXPECT_EQ(q.tensor("blk.0.ffn_up_exps.weight").type, DType::kQ8_0);
}

// transformers v5 stores Qwen3-MoE experts fused: gate_up_proj [N, 2F, E] (gate rows first) and
// down_proj [N, E, F]. Both layouts give the same GGUF.
TEST_F(ArchConvertTest, Qwen3MoeFusedExpertsConvertLikePerExpert) {
  synth("qwen3moe", "tiny", DType::kF32, "m");
  const std::string fused = with_tensors(path("m-hf"), "fused", [](std::vector<HfTensor>& ts) {
    for (int l = 0; l < 2; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
      HfTensor gate_up{p + "gate_up_proj", {16, 256, 256}, {}}, down{p + "down_proj", {16, 256, 128}, {}};
      for (int j = 0; j < 16; ++j) {
        const std::string e = p + std::to_string(j) + ".";
        for (const char* proj : {"gate_proj", "up_proj"}) {
          const std::vector<float> v = tensor_named(ts, e + proj + ".weight").data;
          gate_up.data.insert(gate_up.data.end(), v.begin(), v.end());
        }
        const std::vector<float> d = tensor_named(ts, e + "down_proj.weight").data;
        down.data.insert(down.data.end(), d.begin(), d.end());
        for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) drop_tensor(ts, e + proj + ".weight");
      }
      ts.push_back(std::move(gate_up));
      ts.push_back(std::move(down));
    }
  });
  expect_same_gguf(path("m.gguf"), convert(fused, DType::kF32));
}

TEST_F(ArchConvertTest, NemotronHKeysAndMamba2Transforms) {
  synth("nemotron_h", "tiny", DType::kQ8_0, "h");
  const GgufReader r(convert(path("h-hf"), DType::kF32));
  const std::string a = "nemotron_h.";
  EXPECT_EQ(r.get_string("general.architecture"), "nemotron_h");
  EXPECT_EQ(r.get(a + "feed_forward_length").to_string(), "[0, 512, 0, 0, 512, 0]");  // M-M*-M
  EXPECT_EQ(r.get(a + "attention.head_count_kv").to_string(), "[0, 0, 0, 2, 0, 0]");
  EXPECT_EQ(r.get_u32(a + "attention.head_count"), 4u);
  EXPECT_EQ(r.get_u32(a + "attention.key_length"), 64u);
  EXPECT_FLOAT_EQ(r.get_f32(a + "attention.layer_norm_epsilon"), 1e-5f);
  EXPECT_EQ(r.get_u32(a + "ssm.conv_kernel"), 4u);
  EXPECT_EQ(r.get_u32(a + "ssm.inner_size"), 256u);
  EXPECT_EQ(r.get_u32(a + "ssm.state_size"), 16u);
  EXPECT_EQ(r.get_u32(a + "ssm.time_step_rank"), 8u);
  EXPECT_EQ(r.get_u32(a + "ssm.group_count"), 2u);
  EXPECT_FALSE(r.has(a + "expert_count"));
  EXPECT_TRUE(r.find_tensor("output.weight"));  // untied
  EXPECT_EQ(r.tensor("blk.0.ssm_in.weight").shape(), (std::vector<int64_t>{256, 2 * 256 + 2 * 2 * 16 + 8}));
  EXPECT_EQ(r.tensor("blk.0.ssm_conv1d.weight").shape(), (std::vector<int64_t>{4, 256 + 2 * 2 * 16}));
  EXPECT_EQ(r.tensor("blk.0.ssm_a").shape(), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(r.tensor("blk.0.ssm_d").shape(), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(r.tensor("blk.0.ssm_norm.weight").shape(), (std::vector<int64_t>{128, 2}));
  EXPECT_EQ(r.tensor("blk.1.ffn_up.weight").shape(), (std::vector<int64_t>{256, 512}));
  EXPECT_FALSE(r.find_tensor("blk.1.ffn_gate.weight"));  // ReLU² MLP: no gate
  EXPECT_FALSE(r.find_tensor("blk.3.attn_q_norm.weight"));
  // Values by hand: ssm_a = -exp(A_log); conv1d, D and norm keep their bytes under the reshape.
  const Checkpoint ck(path("h-hf"));
  const std::vector<float> a_log = ck.to_f32("backbone.layers.0.mixer.A_log");
  const std::vector<float> ssm_a = values_of(r.tensor("blk.0.ssm_a"));
  for (size_t i = 0; i < a_log.size(); ++i) {
    EXPECT_EQ(ssm_a[i], -std::exp(a_log[i]));
    EXPECT_LT(ssm_a[i], 0.0f);
  }
  EXPECT_EQ(values_of(r.tensor("blk.0.ssm_conv1d.weight")), ck.to_f32("backbone.layers.0.mixer.conv1d.weight"));
  EXPECT_EQ(values_of(r.tensor("blk.0.ssm_d")), ck.to_f32("backbone.layers.0.mixer.D"));
  EXPECT_EQ(values_of(r.tensor("blk.0.ssm_norm.weight")), ck.to_f32("backbone.layers.0.mixer.norm.weight"));
  EXPECT_EQ(values_of(r.tensor("blk.0.ssm_dt.bias")), ck.to_f32("backbone.layers.0.mixer.dt_bias"));
  // In a quantized file the small Mamba2 tensors, 2-D norm and conv kernel stay F32.
  const GgufReader q(path("h.gguf"));
  for (const char* t : {"blk.0.ssm_conv1d.weight", "blk.0.ssm_a", "blk.0.ssm_d", "blk.0.ssm_norm.weight"}) {
    EXPECT_EQ(q.tensor(t).type, DType::kF32) << t;
  }
  EXPECT_EQ(q.tensor("blk.0.ssm_in.weight").type, DType::kQ8_0);
}

TEST_F(ArchConvertTest, NemotronHMoeUniformAndPuzzle) {
  synth("nemotron_h_moe", "tiny", DType::kF32, "u");
  const GgufReader u(path("u.gguf"));
  const std::string a = "nemotron_h_moe.";
  EXPECT_EQ(u.get(a + "feed_forward_length").to_string(), "[0, 128, 0, 0, 128, 0]");  // MEM*EM
  EXPECT_EQ(u.get_u32(a + "expert_used_count"), 4u);  // uniform: scalars, as llama.cpp writes
  EXPECT_EQ(u.get_u32(a + "expert_feed_forward_length"), 128u);
  EXPECT_EQ(u.get_u32(a + "expert_count"), 16u);
  EXPECT_EQ(u.get_u32(a + "expert_shared_feed_forward_length"), 256u);
  EXPECT_EQ(u.get_u32(a + "expert_shared_count"), 1u);
  EXPECT_TRUE(u.get_bool(a + "expert_weights_norm"));
  EXPECT_FLOAT_EQ(u.get_f32(a + "expert_weights_scale"), 2.5f);
  EXPECT_EQ(u.get_u32(a + "expert_group_count"), 1u);
  EXPECT_FALSE(u.has(a + "moe_latent_size"));
  EXPECT_EQ(u.tensor("blk.1.ffn_up_exps.weight").shape(), (std::vector<int64_t>{256, 128, 16}));
  EXPECT_EQ(u.tensor("blk.1.exp_probs_b.bias").shape(), (std::vector<int64_t>{16}));
  EXPECT_FALSE(u.find_tensor("blk.1.ffn_latent_down.weight"));
  const Checkpoint uck(path("u-hf"));
  EXPECT_TRUE(uck.has("backbone.layers.1.mixer.gate.e_score_correction_bias"));

  synth("nemotron_h_moe", "tiny-puzzle", DType::kF32, "p");
  const GgufReader p(path("p.gguf"));
  EXPECT_EQ(p.get(a + "expert_used_count").to_string(), "[0, 4, 0, 2, 0, 6]");
  EXPECT_EQ(p.get(a + "expert_feed_forward_length").to_string(), "[0, 128, 0, 64, 0, 96]");
  EXPECT_EQ(p.get(a + "feed_forward_length").to_string(), "[0, 128, 0, 64, 0, 96]");
  EXPECT_EQ(p.get_u32(a + "moe_latent_size"), 128u);
  EXPECT_EQ(p.tensor("blk.3.ffn_up_exps.weight").shape(), (std::vector<int64_t>{128, 64, 16}));
  EXPECT_EQ(p.tensor("blk.5.ffn_down_exps.weight").shape(), (std::vector<int64_t>{96, 128, 16}));
  EXPECT_EQ(p.tensor("blk.3.ffn_latent_down.weight").shape(), (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(p.tensor("blk.3.ffn_latent_up.weight").shape(), (std::vector<int64_t>{128, 256}));
  // Puzzle releases name the trunk model.*; the original backbone.* names convert the same.
  const Checkpoint pck(path("p-hf"));
  EXPECT_TRUE(pck.has("model.layers.3.mixer.experts.15.up_proj.weight"));
  const std::string renamed = with_tensors(path("p-hf"), "p-backbone", [](std::vector<HfTensor>& ts) {
    for (HfTensor& t : ts) {
      if (t.name.starts_with("model.")) t.name = "backbone." + t.name.substr(6);
    }
  });
  expect_same_gguf(path("p.gguf"), convert(renamed, DType::kF32));
}

// MTP heads (tensors mtp.*, num_nextn_predict_layers, mtp_block_configs) are not part of the
// target: they are dropped, saying so, and the GGUF is the one without them.
TEST_F(ArchConvertTest, PuzzleMtpBlocksLeftOut) {
  synth("nemotron_h_moe", "tiny-puzzle", DType::kF32, "p");
  const std::string with_mtp = with_tensors(path("p-hf"), "p-mtp", [](std::vector<HfTensor>& ts) {
    ts.push_back({"mtp.layers.0.eh_proj.weight", {256, 512}, std::vector<float>(256 * 512, 0.5f)});
    ts.push_back({"mtp.layers.1.mixer.gate.weight", {16, 256}, std::vector<float>(16 * 256, 0.25f)});
  });
  Json c = HfConfig::load(with_mtp).json();
  c["num_nextn_predict_layers"] = 1;
  c["mtp_block_configs"] = {Json{{"block_type", "attention"}}, Json{{"block_type", "moe"}}};
  write_json_file(with_mtp + "/config.json", c);
  testing::internal::CaptureStderr();
  const std::string out = convert(with_mtp, DType::kF32);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("MTP head"), std::string::npos) << err;
  EXPECT_NE(err.find("2 mtp.* tensors"), std::string::npos) << err;
  expect_same_gguf(path("p.gguf"), out);
}

TEST_F(ArchConvertTest, BadNemotronInputsAreNamed) {
  synth("nemotron_h", "tiny", DType::kF32, "h");
  synth("nemotron_h_moe", "tiny", DType::kF32, "u");
  synth("nemotron_h_moe", "tiny-puzzle", DType::kF32, "p");
  const std::string h = path("h-hf"), u = path("u-hf"), p = path("p-hf");
  expect_failure(with_config(h, "short", [](Json& c) { c["hybrid_override_pattern"] = "M-M*-"; }),
                 {"hybrid_override_pattern 'M-M*-' has 5 entries", "num_hidden_layers is 6"});
  expect_failure(with_config(h, "kind", [](Json& c) { c["hybrid_override_pattern"] = "M-X*-M"; }),
                 {"hybrid_override_pattern[2] is 'X'", "expected M (Mamba2)"});
  expect_failure(with_config(h, "list", [](Json& c) {
                   c.erase("hybrid_override_pattern");
                   c["layers_block_type"] = {"mamba", "mlp", "mamba", "attention", "mlp"};
                 }),
                 {"layers_block_type has 5 entries but num_hidden_layers is 6"});
  expect_failure(with_config(h, "type", [](Json& c) {
                   c.erase("hybrid_override_pattern");
                   c["layers_block_type"] = {"mamba", "conv", "mamba", "attention", "mlp", "mamba"};
                 }),
                 {"layers_block_type[1] is 'conv'"});
  expect_failure(with_config(h, "moe-in-dense", [](Json& c) { c["hybrid_override_pattern"] = "M-M*EM"; }),
                 {"layer 4 is a MoE block", "num_experts_per_tok"});
  expect_failure(with_config(u, "mlp-in-moe", [](Json& c) { c["hybrid_override_pattern"] = "M-M*EM"; }),
                 {"layer 1 is an MLP block but the model is MoE"});
  expect_failure(with_config(p, "block", [](Json& c) { c["block_configs"][3]["block_type"] = "gdn"; }),
                 {"block_configs[3].block_type is 'gdn'"});
  expect_failure(with_config(p, "blocks", [](Json& c) { c["block_configs"].push_back(Json{{"block_type", "mamba"}}); }),
                 {"block_configs has 7 entries but num_hidden_layers is 6"});
  expect_failure(with_config(p, "experts", [](Json& c) { c["block_configs"][3]["n_routed_experts"] = 8; }),
                 {"block_configs[3] has n_routed_experts = 8", "block_configs[1] has 16", "one n_routed_experts"});
  // A block's expert width that its tensors do not have.
  expect_failure(with_config(p, "width", [](Json& c) { c["block_configs"][3]["moe_intermediate_size"] = 80; }),
                 {"model.layers.3.mixer.experts.0.up_proj.weight' has shape [64, 128]", "implies [80, 128]"});
  // Mamba2 tensors of the wrong shape.
  expect_failure(with_tensors(h, "in-proj", [](std::vector<HfTensor>& ts) {
                   HfTensor& t = (tensor_named(ts, "backbone.layers.2.mixer.in_proj.weight"));
                   t.shape = {585, 256};
                   t.data.resize(585 * 256);
                 }),
                 {"backbone.layers.2.mixer.in_proj.weight' has shape [585, 256]", "implies [584, 256]"});
  expect_failure(with_tensors(h, "a-log", [](std::vector<HfTensor>& ts) {
                   HfTensor& t = (tensor_named(ts, "backbone.layers.0.mixer.A_log"));
                   t.shape = {9};
                   t.data.resize(9);
                 }),
                 {"backbone.layers.0.mixer.A_log' has shape [9]", "implies [8]", "blk.0.ssm_a"});
  expect_failure(with_tensors(h, "no-conv", [](std::vector<HfTensor>& ts) { drop_tensor(ts, "backbone.layers.5.mixer.conv1d.weight"); }),
                 {"missing tensor 'backbone.layers.5.mixer.conv1d.weight'", "blk.5.ssm_conv1d.weight"});
  expect_failure(with_config(h, "bias", [](Json& c) { c["use_bias"] = true; }), {"use_bias is true"});
}

TEST_F(ArchConvertTest, BadQwen3MoeInputsAreNamed) {
  synth("qwen3moe", "tiny", DType::kF32, "m");
  const std::string m = path("m-hf");
  expect_failure(with_config(m, "norm", [](Json& c) { c["norm_topk_prob"] = false; }),
                 {"norm_topk_prob is false", "renormalises"});
  expect_failure(with_config(m, "step", [](Json& c) { c["decoder_sparse_step"] = 2; }), {"decoder_sparse_step is 2"});
  expect_failure(with_config(m, "dense", [](Json& c) { c["mlp_only_layers"] = {1}; }), {"mlp_only_layers is not empty"});
  expect_failure(with_config(m, "used", [](Json& c) { c["num_experts_per_tok"] = 17; }),
                 {"num_experts_per_tok 17 is more than num_experts 16"});
  expect_failure(with_tensors(m, "expert", [](std::vector<HfTensor>& ts) {
                   HfTensor& t = (tensor_named(ts, "model.layers.0.mlp.experts.3.up_proj.weight"));
                   t.shape = {127, 256};
                   t.data.resize(127 * 256);
                 }),
                 {"model.layers.0.mlp.experts.3.up_proj.weight' has shape [127, 256]", "implies [128, 256]",
                  "blk.0.ffn_up_exps.weight"});
  expect_failure(with_tensors(m, "router", [](std::vector<HfTensor>& ts) {
                   HfTensor& t = (tensor_named(ts, "model.layers.1.mlp.gate.weight"));
                   t.shape = {16, 128};
                   t.data.resize(16 * 128);
                 }),
                 {"model.layers.1.mlp.gate.weight' has shape [16, 128]", "implies [16, 256]"});
  expect_failure(with_tensors(m, "missing", [](std::vector<HfTensor>& ts) {
                   drop_tensor(ts, "model.layers.1.mlp.experts.15.down_proj.weight");
                 }),
                 {"missing tensor 'model.layers.1.mlp.experts.15.down_proj.weight'"});
  expect_failure(with_tensors(m, "extra", [](std::vector<HfTensor>& ts) {
                   ts.push_back({"model.layers.1.mlp.experts.16.down_proj.weight", {256, 128}, std::vector<float>(256 * 128)});
                 }),
                 {"unexpected tensor 'model.layers.1.mlp.experts.16.down_proj.weight'"});
}

}  // namespace
}  // namespace fulgur
