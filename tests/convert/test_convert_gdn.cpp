// The Gated-DeltaNet hybrids through the converter: `fulgur synth` (GGUF + --hf export) against
// `fulgur convert` of the export, tensor for tensor; the value transforms and the tiled V-head
// order recomputed here from the checkpoint; both Qwen3.5 checkpoint forms; the MTP block in, out
// and required; bad configs and checkpoints (clear error, no output left).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "convert/synth_convert_fixture.h"
#include "convert/tiny_checkpoint.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"
#include "tensor/quants.h"
#include "zoo_path.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The tiny synth shape's dims (synth/synth_configs.cpp), spelt out for the checks.
constexpr int64_t kE = 256, kLayers = 4, kHk = 2, kDk = 32, kHv = 4, kDv = 32, kK = 4;
constexpr int64_t kKd = kHk * kDk, kVd = kHv * kDv, kC = 2 * kKd + kVd;

using test::drop_tensor;
using test::expect_same_gguf;
using test::tensor_named;
using test::values_of;

class GdnConvert : public test::SynthConvertTest {
 protected:
  // synth ARCH tiny [--mtp] into <name>.gguf and <name>-hf.
  std::string synth_tiny(const std::string& arch, bool mtp, const std::string& name, DType type = DType::kF32) {
    return synth(arch, "tiny", type, name, 0, mtp);
  }
};

TEST_F(GdnConvert, SynthIsTheConversionOfItsExport) {
  for (const std::string arch : {"qwen35", "qwen35moe", "qwen3next"}) {
    for (const bool mtp : {false, true}) {
      for (const DType type : {DType::kF32, DType::kQ8_0}) {
        SCOPED_TRACE(cat(arch, ", mtp ", mtp, ", ", dtype_name(type)));
        const std::string name = cat(arch, mtp, dtype_name(type));
        const std::string synth_file = synth_tiny(arch, mtp, name, type);
        const std::string converted_file = convert(path(name + "-hf"), type, name + "-c.gguf");
        expect_same_gguf(synth_file, converted_file);
        const GgufReader converted(converted_file);
        EXPECT_EQ(converted.get_string("general.architecture"), arch);
        EXPECT_EQ(converted.get_u32(arch + ".block_count"), mtp ? 5u : 4u);
        EXPECT_EQ(converted.has(arch + ".nextn_predict_layers"), mtp);
        EXPECT_EQ(converted.tensor("blk.0.ssm_conv1d.weight").type, DType::kF32);  // as llama.cpp keeps it
        EXPECT_EQ(converted.tensor("blk.0.attn_qkv.weight").type, type);
        if (arch != "qwen35") {
          EXPECT_EQ(converted.tensor("blk.0.ffn_gate_inp.weight").type, DType::kF32);
        }
      }
    }
  }
}

// HF head order of each GGUF V head, computed differently from the converter: sort the grouped
// heads (K head g = h / r, index j = h % r within it) by (j, g).
std::vector<int64_t> tiled_heads() {
  std::vector<int64_t> heads(kHv);
  for (int64_t h = 0; h < kHv; ++h) heads[h] = h;
  const int64_t r = kHv / kHk;
  std::stable_sort(heads.begin(), heads.end(), [&](int64_t a, int64_t b) {
    return std::pair(a % r, a / r) < std::pair(b % r, b / r);
  });
  return heads;
}

TEST_F(GdnConvert, Qwen35ValuesRecomputedFromTheCheckpoint) {
  synth_tiny("qwen35", /*mtp=*/true, "m");
  const Checkpoint ck(path("m-hf"));
  const GgufReader r(convert(path("m-hf"), DType::kF32));
  const std::vector<int64_t> order = tiled_heads();
  ASSERT_EQ(order, (std::vector<int64_t>{0, 2, 1, 3}));  // Hk = 2, r = 2
  auto hf = [&](const std::string& n) { return ck.to_f32("model.language_model.layers.0.linear_attn." + n); };
  auto gg = [&](const std::string& n) { return values_of(r.tensor("blk.0." + n)); };

  // Rows of Dv (or 1) per V head: GGUF head t is HF head order[t]; in_proj_qkv's q/k rows stay.
  auto check_rows = [&](const std::vector<float>& g, const std::vector<float>& h, int64_t skip_rows,
                        int64_t unit, int64_t row_len) {
    ASSERT_EQ(g.size(), h.size());
    for (int64_t i = 0; i < skip_rows * row_len; ++i) ASSERT_EQ(g[i], h[i]) << i;
    for (int64_t t = 0; t < kHv; ++t) {
      for (int64_t i = 0; i < unit * row_len; ++i) {
        ASSERT_EQ(g[(skip_rows + t * unit) * row_len + i], h[(skip_rows + order[t] * unit) * row_len + i])
            << "head " << t << " value " << i;
      }
    }
  };
  check_rows(gg("attn_qkv.weight"), hf("in_proj_qkv.weight"), 2 * kKd, kDv, kE);
  check_rows(gg("attn_gate.weight"), hf("in_proj_z.weight"), 0, kDv, kE);
  check_rows(gg("ssm_beta.weight"), hf("in_proj_b.weight"), 0, 1, kE);
  check_rows(gg("ssm_alpha.weight"), hf("in_proj_a.weight"), 0, 1, kE);
  check_rows(gg("ssm_conv1d.weight"), hf("conv1d.weight"), 2 * kKd, kDv, kK);  // [C, 1, K] -> {K, C}
  check_rows(gg("ssm_dt.bias"), hf("dt_bias"), 0, 1, 1);
  EXPECT_EQ(r.tensor("blk.0.ssm_conv1d.weight").shape(), (std::vector<int64_t>{kK, kC}));
  const std::vector<float> a_log = hf("A_log"), ssm_a = gg("ssm_a");
  for (int64_t t = 0; t < kHv; ++t) EXPECT_EQ(ssm_a[t], -std::exp(a_log[order[t]]));
  // out_proj [E, Vd]: the columns of every row move by head.
  const std::vector<float> out_hf = hf("out_proj.weight"), out_gg = gg("ssm_out.weight");
  for (int64_t e = 0; e < kE; ++e) {
    for (int64_t t = 0; t < kHv; ++t) {
      for (int64_t d = 0; d < kDv; ++d) {
        ASSERT_EQ(out_gg[e * kVd + t * kDv + d], out_hf[e * kVd + order[t] * kDv + d]);
      }
    }
  }
  EXPECT_EQ(gg("ssm_norm.weight"), hf("norm.weight"));  // the gated norm: no +1

  // The zero-centred norms get +1 (in f32), everywhere including the MTP block.
  const std::map<std::string, std::string> plus_one = {
      {"blk.0.attn_norm.weight", "model.language_model.layers.0.input_layernorm.weight"},
      {"blk.0.post_attention_norm.weight", "model.language_model.layers.0.post_attention_layernorm.weight"},
      {"blk.3.attn_q_norm.weight", "model.language_model.layers.3.self_attn.q_norm.weight"},
      {"blk.3.attn_k_norm.weight", "model.language_model.layers.3.self_attn.k_norm.weight"},
      {"output_norm.weight", "model.language_model.norm.weight"},
      {"blk.4.nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight"},
      {"blk.4.nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight"},
      {"blk.4.nextn.shared_head_norm.weight", "mtp.norm.weight"},
      {"blk.4.attn_norm.weight", "mtp.layers.0.input_layernorm.weight"},
      {"blk.4.attn_q_norm.weight", "mtp.layers.0.self_attn.q_norm.weight"},
  };
  for (const auto& [g, h] : plus_one) {
    SCOPED_TRACE(g);
    std::vector<float> want = ck.to_f32(h);
    for (float& v : want) v = 1.0f + v;
    EXPECT_EQ(values_of(r.tensor(g)), want);
  }
  // Same bytes: the gated attention's q_proj (query and gate rows per head) and the MTP fc.
  const std::map<std::string, std::string> same = {
      {"blk.3.attn_q.weight", "model.language_model.layers.3.self_attn.q_proj.weight"},
      {"blk.4.attn_q.weight", "mtp.layers.0.self_attn.q_proj.weight"},
      {"blk.4.nextn.eh_proj.weight", "mtp.fc.weight"},
      {"blk.4.ffn_down.weight", "mtp.layers.0.mlp.down_proj.weight"},
  };
  for (const auto& [g, h] : same) {
    SCOPED_TRACE(g);
    EXPECT_EQ(values_of(r.tensor(g)), ck.to_f32(h));
    const std::vector<int64_t> hs = ck.tensor(h).shape;
    EXPECT_EQ(r.tensor(g).shape(), std::vector<int64_t>(hs.rbegin(), hs.rend()));
  }
  EXPECT_EQ(r.tensor("blk.3.attn_q.weight").shape(), (std::vector<int64_t>{kE, 2 * 4 * 64}));
  EXPECT_EQ(r.tensor("blk.4.nextn.eh_proj.weight").shape(), (std::vector<int64_t>{2 * kE, kE}));
  EXPECT_EQ(r.find_tensor("output.weight"), nullptr);  // tied, as the dense Qwen3.5 releases
  EXPECT_EQ(r.get_int_array<int32_t>("qwen35.rope.dimension_sections"), (std::vector<int32_t>{3, 3, 2, 0}));
  EXPECT_EQ(r.get_u32("qwen35.rope.dimension_count"), 16u);
  EXPECT_EQ(r.get_u32("qwen35.full_attention_interval"), 4u);
  EXPECT_EQ(r.get_u32("qwen35.ssm.inner_size"), static_cast<uint32_t>(kVd));
  EXPECT_EQ(r.get_u32("qwen35.nextn_predict_layers"), 1u);
}

// Qwen3_5ForCausalLM: the text config at the top level and the weights under model.*; and the
// ConditionalGeneration form's vision tower is dropped.
TEST_F(GdnConvert, Qwen35BothCheckpointForms) {
  synth_tiny("qwen35", /*mtp=*/true, "m");
  const std::string nested = convert(path("m-hf"), DType::kF32, "nested.gguf");

  const std::string vision = with_tensors(path("m-hf"), "vision-hf", [](std::vector<HfTensor>& ts) {
    ts.push_back({"model.visual.patch_embed.proj.weight", {4, 3}, std::vector<float>(12, 0.5f)});
  });
  expect_same_gguf(nested, convert(vision, DType::kF32, "vision.gguf"));

  const std::string flat_cfg = with_config(path("m-hf"), "flat-cfg-hf", [](Json& c) {
    Json text = c["text_config"];
    text["architectures"] = {"Qwen3_5ForCausalLM"};
    c = text;
  });
  const std::string flat = with_tensors(flat_cfg, "flat-hf", [](std::vector<HfTensor>& ts) {
    for (HfTensor& t : ts) {
      if (t.name.starts_with("model.language_model.")) t.name = "model." + t.name.substr(21);
    }
  });
  const GgufReader a(convert(flat, DType::kF32, "flat.gguf")), b(nested);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    EXPECT_EQ(a.tensors()[i].name, b.tensors()[i].name);
    EXPECT_EQ(values_of(a.tensors()[i]), values_of(b.tensors()[i])) << a.tensors()[i].name;
  }
  EXPECT_EQ(a.get_u32("qwen35.block_count"), 5u);
}

TEST_F(GdnConvert, MtpInOutAndRequired) {
  synth_tiny("qwen35", /*mtp=*/true, "m");
  const std::string plain = synth_tiny("qwen35", /*mtp=*/false, "p");
  // --no-mtp on the MTP export: exactly the trunk-only model (weights are seeded by name).
  const std::string trunk = convert(path("m-hf"), DType::kF32, "trunk.gguf", 0, MtpMode::kExclude);
  expect_same_gguf(plain, trunk);
  EXPECT_FALSE(GgufReader(trunk).has("qwen35.nextn_predict_layers"));
  // --mtp: included; required.
  const GgufReader with(convert(path("m-hf"), DType::kF32, "with.gguf", 0, MtpMode::kInclude));
  EXPECT_EQ(with.get_u32("qwen35.block_count"), 5u);
  EXPECT_NE(with.find_tensor("blk.4.nextn.eh_proj.weight"), nullptr);
  expect_failure(path("p-hf"), {"--mtp", "mtp_num_hidden_layers"}, MtpMode::kInclude);
  // --mtp on an architecture without MTP export.
  test::write_tiny(path("dense-hf"), test::make_tiny(test::TinySpec{}));
  expect_failure(path("dense-hf"), {"--mtp", "Qwen3ForCausalLM", "no MTP"}, MtpMode::kInclude);
  // The config says 1 but the checkpoint has no mtp.* tensors (a stripped release): trunk only.
  const std::string stripped = with_tensors(path("m-hf"), "stripped-hf", [](std::vector<HfTensor>& ts) {
    std::erase_if(ts, [](const HfTensor& t) { return t.name.starts_with("mtp."); });
  });
  expect_same_gguf(plain, convert(stripped, DType::kF32, "stripped.gguf"));
}

TEST_F(GdnConvert, BadInputIsAClearErrorWithNoOutput) {
  synth_tiny("qwen35", /*mtp=*/true, "m");
  const std::string hf = path("m-hf");
  auto config = [&](const std::function<void(Json&)>& edit) { return with_config(hf, "bad-hf", edit); };
  auto tensors = [&](const std::function<void(std::vector<HfTensor>&)>& edit) {
    return with_tensors(hf, "bad-hf", edit);
  };
  // An incomplete MTP block.
  expect_failure(tensors([](auto& ts) { drop_tensor(ts, "mtp.layers.0.self_attn.k_proj.weight"); }),
                 {"missing tensor", "mtp.layers.0.self_attn.k_proj.weight", "blk.4.attn_k.weight"});
  expect_failure(tensors([](auto& ts) { drop_tensor(ts, "mtp.fc.weight"); }),
                 {"missing tensor", "mtp.fc.weight", "nextn.eh_proj"});
  // MTP tensors the config does not announce, and more MTP blocks than llama.cpp runs.
  expect_failure(config([](Json& c) { c["text_config"]["mtp_num_hidden_layers"] = 0; }),
                 {"mtp.", "mtp_num_hidden_layers"});
  expect_failure(config([](Json& c) { c["text_config"]["mtp_num_hidden_layers"] = 2; }), {"mtp_num_hidden_layers is 2"});
  // Wrong shapes: the config's V heads disagree with the checkpoint; a transposed MTP fc.
  expect_failure(config([](Json& c) { c["text_config"]["linear_num_value_heads"] = 8; }),
                 {"in_proj_qkv.weight", "[256, 256]", "[384, 256]"});
  expect_failure(tensors([](auto& ts) { tensor_named(ts, "mtp.fc.weight").shape = {kE * 2, kE}; }),
                 {"mtp.fc.weight", "[512, 256]", "[256, 512]"});
  // Inconsistent configs.
  expect_failure(config([](Json& c) { c["text_config"]["linear_num_value_heads"] = 3; }),
                 {"linear_num_value_heads", "linear_num_key_heads"});
  expect_failure(config([](Json& c) { c["text_config"]["layer_types"][1] = "full_attention"; }),
                 {"layer_types[1]", "full_attention_interval"});
  expect_failure(config([](Json& c) { c["text_config"]["attn_output_gate"] = false; }), {"attn_output_gate"});
  expect_failure(config([](Json& c) { c["text_config"].erase("linear_conv_kernel_dim"); }),
                 {"text_config.linear_conv_kernel_dim", "missing"});
  expect_failure(config([](Json& c) { c["text_config"]["mtp_use_dedicated_embeddings"] = true; }),
                 {"mtp_use_dedicated_embeddings"});
  // An unexpected tensor.
  expect_failure(tensors([](auto& ts) { ts.push_back({"model.language_model.layers.0.linear_attn.extra", {2}, {1, 2}}); }),
                 {"unexpected tensor", "linear_attn.extra"});
}

// Qwen3-Next: in_proj_qkvz regrouped by slices (recomputed here group by group), in_proj_ba and
// the V heads kept in HF's grouped order, and the MoE with its gated shared expert.
TEST_F(GdnConvert, Qwen3NextValuesRecomputedFromTheCheckpoint) {
  synth_tiny("qwen3next", /*mtp=*/true, "n");
  const Checkpoint ck(path("n-hf"));
  const GgufReader r(convert(path("n-hf"), DType::kF32));
  auto hf = [&](const std::string& n) { return ck.to_f32("model.layers.0." + n); };
  auto gg = [&](const std::string& n) { return values_of(r.tensor("blk.0." + n)); };
  // in_proj_qkvz rows, per K head g: q_g (Dk), k_g (Dk), v_g (r*Dv), z_g (r*Dv).
  const std::vector<float> qkvz = hf("linear_attn.in_proj_qkvz.weight");
  const int64_t rv = kVd / kHk, group = 2 * kDk + 2 * rv;
  std::vector<float> want_qkv, want_z;
  auto take = [&](std::vector<float>& out, int64_t g, int64_t offset, int64_t n) {
    const auto* src = qkvz.data() + (g * group + offset) * kE;
    out.insert(out.end(), src, src + n * kE);
  };
  for (int64_t g = 0; g < kHk; ++g) take(want_qkv, g, 0, kDk);
  for (int64_t g = 0; g < kHk; ++g) take(want_qkv, g, kDk, kDk);
  for (int64_t g = 0; g < kHk; ++g) take(want_qkv, g, 2 * kDk, rv);
  for (int64_t g = 0; g < kHk; ++g) take(want_z, g, 2 * kDk + rv, rv);
  EXPECT_EQ(gg("attn_qkv.weight"), want_qkv);
  EXPECT_EQ(gg("attn_gate.weight"), want_z);
  EXPECT_EQ(r.tensor("blk.0.attn_qkv.weight").shape(), (std::vector<int64_t>{kE, kC}));
  EXPECT_EQ(r.tensor("blk.0.attn_gate.weight").shape(), (std::vector<int64_t>{kE, kVd}));
  // Grouped order kept.
  EXPECT_EQ(gg("ssm_ba.weight"), hf("linear_attn.in_proj_ba.weight"));
  EXPECT_EQ(r.tensor("blk.0.ssm_ba.weight").shape(), (std::vector<int64_t>{kE, 2 * kHv}));
  EXPECT_EQ(gg("ssm_conv1d.weight"), hf("linear_attn.conv1d.weight"));
  EXPECT_EQ(gg("ssm_out.weight"), hf("linear_attn.out_proj.weight"));
  EXPECT_EQ(gg("ssm_dt.bias"), hf("linear_attn.dt_bias"));
  std::vector<float> a = hf("linear_attn.A_log");
  for (float& v : a) v = -std::exp(v);
  EXPECT_EQ(gg("ssm_a"), a);
  std::vector<float> n = hf("input_layernorm.weight");
  for (float& v : n) v = 1.0f + v;
  EXPECT_EQ(gg("attn_norm.weight"), n);
  // The MoE: router, expert j's slice of the stacked tensors, the shared expert and its gate.
  EXPECT_EQ(gg("ffn_gate_inp.weight"), hf("mlp.gate.weight"));
  const std::vector<float> up = gg("ffn_up_exps.weight");
  EXPECT_EQ(r.tensor("blk.0.ffn_up_exps.weight").shape(), (std::vector<int64_t>{kE, 128, 8}));
  for (int64_t j = 0; j < 8; ++j) {
    const std::vector<float> e = hf(cat("mlp.experts.", j, ".up_proj.weight"));
    EXPECT_TRUE(std::equal(e.begin(), e.end(), up.begin() + j * e.size())) << "expert " << j;
  }
  EXPECT_EQ(gg("ffn_down_shexp.weight"), hf("mlp.shared_expert.down_proj.weight"));
  EXPECT_EQ(gg("ffn_gate_inp_shexp.weight"), hf("mlp.shared_expert_gate.weight"));
  EXPECT_EQ(r.tensor("blk.0.ffn_gate_inp_shexp.weight").shape(), (std::vector<int64_t>{kE}));
  EXPECT_EQ(r.get_u32("qwen3next.expert_shared_feed_forward_length"), 128u);
  EXPECT_FALSE(r.has("qwen3next.rope.dimension_sections"));  // NeoX, not IMROPE
  // The MTP block's MoE.
  EXPECT_EQ(values_of(r.tensor("blk.4.ffn_gate_inp.weight")), ck.to_f32("mtp.layers.0.mlp.gate.weight"));
  EXPECT_EQ(values_of(r.tensor("blk.4.nextn.eh_proj.weight")), ck.to_f32("mtp.fc.weight"));
}

// Released Qwen3.5-MoE checkpoints store the experts fused (mlp.experts.gate_up_proj [N, 2F, E],
// gate rows first, and down_proj [N, E, F]): the same GGUF as the per-expert form.
TEST_F(GdnConvert, Qwen35MoeFusedExperts) {
  synth_tiny("qwen35moe", /*mtp=*/true, "m");
  const std::string per_expert = convert(path("m-hf"), DType::kF32, "per-expert.gguf");
  const std::string fused = with_tensors(path("m-hf"), "fused-hf", [](std::vector<HfTensor>& ts) {
    const int64_t N = 8, F = 128;
    std::vector<std::string> prefixes = {"mtp.layers.0.mlp.experts."};
    for (int64_t i = 0; i < kLayers; ++i) prefixes.push_back(cat("model.language_model.layers.", i, ".mlp.experts."));
    for (const std::string& ex : prefixes) {
      HfTensor gate_up{ex + "gate_up_proj", {N, 2 * F, kE}, {}}, down{ex + "down_proj", {N, kE, F}, {}};
      for (int64_t j = 0; j < N; ++j) {
        for (const char* w : {"gate_proj", "up_proj"}) {
          const std::vector<float>& v = tensor_named(ts, cat(ex, j, ".", w, ".weight")).data;
          gate_up.data.insert(gate_up.data.end(), v.begin(), v.end());
        }
        const std::vector<float>& d = tensor_named(ts, cat(ex, j, ".down_proj.weight")).data;
        down.data.insert(down.data.end(), d.begin(), d.end());
        for (const char* w : {"gate_proj", "up_proj", "down_proj"}) drop_tensor(ts, cat(ex, j, ".", w, ".weight"));
      }
      ts.push_back(std::move(gate_up));
      ts.push_back(std::move(down));
    }
  });
  expect_same_gguf(per_expert, convert(fused, DType::kF32, "fused.gguf"));
}

TEST_F(GdnConvert, MoeConfigsLlamaCppCannotRun) {
  synth_tiny("qwen3next", /*mtp=*/false, "n");
  auto edit = [&](const char* key, const Json& value) {
    return with_config(path("n-hf"), "bad-hf", [&](Json& c) { c[key] = value; });
  };
  expect_failure(edit("norm_topk_prob", false), {"norm_topk_prob is false", "qwen3next"});
  expect_failure(edit("decoder_sparse_step", 2), {"decoder_sparse_step is 2"});
  expect_failure(edit("mlp_only_layers", Json::array({1})), {"mlp_only_layers"});
  expect_failure(edit("num_experts_per_tok", 9), {"num_experts_per_tok 9", "num_experts 8"});
  expect_failure(edit("shared_expert_intermediate_size", 64),
                 {"shared_expert.gate_proj.weight", "[128, 256]", "[64, 256]"});
}

// The zoo's trained qwen35 GGUF (which llama.cpp loads, MTP block included) has exactly the keys
// and tensor names, ranks and layout of a synthetic qwen35 with an MTP block, but for its untied
// LM head (the zoo model is untied; the dense Qwen3.5 releases, and so the synth, are tied).
TEST_F(GdnConvert, SameKeysAndTensorsAsTheZooQwen35) {
  const std::string zoo = test::zoo_dir() + "/zoo-qwen35-code/zoo-qwen35-code-f32.gguf";
  if (!fs::exists(zoo)) GTEST_SKIP() << zoo << " not present (set FULGUR_ZOO_DIR to the zoo folder)";
  const GgufReader z(zoo), s(synth_tiny("qwen35", /*mtp=*/true, "m"));
  auto keys = [](const GgufReader& r) {
    std::set<std::string> out;
    for (const GgufKv& kv : r.metadata()) {
      if (kv.key.starts_with("qwen35.")) out.insert(kv.key);
    }
    return out;
  };
  EXPECT_EQ(keys(s), keys(z));
  auto tensors = [](const GgufReader& r) {
    std::map<std::string, uint32_t> out;  // name -> rank
    for (const GgufTensorInfo& t : r.tensors()) {
      if (t.name != "output.weight") out[t.name] = t.n_dims;
    }
    return out;
  };
  EXPECT_EQ(tensors(s), tensors(z));
  EXPECT_EQ(describe(read_block_layout(s)), describe(read_block_layout(z)));
  EXPECT_EQ(z.get_u32("qwen35.nextn_predict_layers"), 1u);
}

}  // namespace
}  // namespace fulgur
