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
#include <string>
#include <vector>

#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/hf_export.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "convert/tiny_checkpoint.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "synth/synth.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The tiny synth shape's dims (synth/gdn_synth.cpp), spelt out for the checks.
constexpr int64_t kE = 256, kLayers = 4, kHk = 2, kDk = 32, kHv = 4, kDv = 32, kK = 4;
constexpr int64_t kKd = kHk * kDk, kVd = kHv * kDv, kC = 2 * kKd + kVd;

std::vector<float> values(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const int64_t rows = t.n_elements() / t.ne[0];
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(t.type, t.data + r * rb, out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

// Every metadata key but general.name, and every tensor (name, order, type, shape, bytes).
void expect_same_file(const GgufReader& a, const GgufReader& b) {
  std::map<std::string, std::string> ka, kb;
  for (const GgufKv& kv : a.metadata()) ka[kv.key] = kv.value.to_string(0);
  for (const GgufKv& kv : b.metadata()) kb[kv.key] = kv.value.to_string(0);
  ka.erase("general.name");
  kb.erase("general.name");
  EXPECT_EQ(ka, kb);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensorInfo& x = a.tensors()[i];
    const GgufTensorInfo& y = b.tensors()[i];
    SCOPED_TRACE(x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.shape(), y.shape());
    ASSERT_EQ(x.nbytes, y.nbytes);
    EXPECT_TRUE(std::equal(x.data, x.data + x.nbytes, y.data)) << "bytes differ";
  }
}

class GdnConvert : public testing::Test {
 protected:
  void SetUp() override { dir_ = test::make_temp_dir("fulgur_gdn_convert"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // synth into NAME.gguf (+ NAME_hf/ when hf).
  std::string synth(const std::string& arch, bool mtp, const std::string& name, DType type = DType::kF32,
                    bool hf = true) {
    SynthOptions o;
    o.arch = arch;
    o.mtp = mtp;
    o.type = type;
    o.seed = 7;
    o.tokenizer_json = "builtin";
    o.out = path(name + ".gguf");
    if (hf) o.hf_dir = path(name + "_hf");
    synth_model(o);
    return o.out;
  }
  std::string convert(const std::string& hf, MtpMode mtp = MtpMode::kAuto, DType type = DType::kF32,
                      const std::string& out = "out.gguf") {
    ConvertOptions o;
    o.in_dir = hf;
    o.out_path = path(out);
    o.type = type;
    o.progress = false;
    o.mtp = mtp;
    convert_hf_to_gguf(o);
    return o.out_path;
  }
  // Conversion fails with every piece in the message and leaves no out.gguf (or temporary).
  void expect_failure(const std::string& hf, const std::vector<std::string>& pieces,
                      MtpMode mtp = MtpMode::kAuto) {
    try {
      convert(hf, mtp);
      ADD_FAILURE() << "conversion of " << hf << " succeeded";
    } catch (const Error& e) {
      for (const std::string& p : pieces) {
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
      }
    }
    for (const auto& entry : fs::directory_iterator(dir_)) {
      EXPECT_NE(entry.path().filename().string().rfind("out.gguf", 0), 0u) << "left behind: " << entry.path();
    }
  }

  std::string dir_;
};

// A checkpoint folder rewritten: config edited, tensors renamed / dropped / added; the tokenizer
// files are copied as they are.
struct Export {
  std::string source;
  Json config;
  std::vector<HfTensor> tensors;

  explicit Export(const std::string& dir) : source(dir) {
    config = HfConfig::load(dir).json();
    const Checkpoint ckpt(dir);
    for (const std::string& name : ckpt.names()) {
      tensors.push_back({name, ckpt.tensor(name).shape, ckpt.to_f32(name)});
    }
  }
  HfTensor* find(const std::string& name) {
    for (HfTensor& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
  void erase(const std::string& name) {
    std::erase_if(tensors, [&](const HfTensor& t) { return t.name == name; });
  }
  void write(const std::string& dir) const {
    fs::remove_all(dir);
    fs::copy(source, dir);
    write_json_file(dir + "/config.json", config);
    SafetensorsWriter w;
    for (const HfTensor& t : tensors) w.add_f32(t.name, t.shape, t.data);
    w.write(dir + "/model.safetensors");
  }
};

TEST_F(GdnConvert, SynthIsTheConversionOfItsExport) {
  for (const std::string arch : {"qwen35", "qwen35moe", "qwen3next"}) {
    for (const bool mtp : {false, true}) {
      for (const DType type : {DType::kF32, DType::kQ8_0}) {
        SCOPED_TRACE(cat(arch, ", mtp ", mtp, ", ", dtype_name(type)));
        const std::string name = cat(arch, mtp, dtype_name(type));
        const GgufReader synth_file(synth(arch, mtp, name, type));
        const GgufReader converted(convert(path(name + "_hf"), MtpMode::kAuto, type, name + "_c.gguf"));
        expect_same_file(synth_file, converted);
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
  synth("qwen35", /*mtp=*/true, "m", DType::kF32);
  const Checkpoint ck(path("m_hf"));
  const GgufReader r(convert(path("m_hf")));
  const std::vector<int64_t> order = tiled_heads();
  ASSERT_EQ(order, (std::vector<int64_t>{0, 2, 1, 3}));  // Hk = 2, r = 2
  auto hf = [&](const std::string& n) { return ck.to_f32("model.language_model.layers.0.linear_attn." + n); };
  auto gg = [&](const std::string& n) { return values(r.tensor("blk.0." + n)); };

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
    EXPECT_EQ(values(r.tensor(g)), want);
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
    EXPECT_EQ(values(r.tensor(g)), ck.to_f32(h));
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
  synth("qwen35", /*mtp=*/true, "m", DType::kF32);
  const GgufReader nested(convert(path("m_hf"), MtpMode::kAuto, DType::kF32, "nested.gguf"));

  Export with_vision(path("m_hf"));
  with_vision.tensors.push_back({"model.visual.patch_embed.proj.weight", {4, 3}, std::vector<float>(12, 0.5f)});
  with_vision.write(path("vision_hf"));
  expect_same_file(nested, GgufReader(convert(path("vision_hf"), MtpMode::kAuto, DType::kF32, "vision.gguf")));

  Export flat(path("m_hf"));
  Json text = flat.config["text_config"];
  text["architectures"] = {"Qwen3_5ForCausalLM"};
  flat.config = text;
  for (HfTensor& t : flat.tensors) {
    if (t.name.starts_with("model.language_model.")) t.name = "model." + t.name.substr(21);
  }
  flat.write(path("flat_hf"));
  const GgufReader r(convert(path("flat_hf"), MtpMode::kAuto, DType::kF32, "flat.gguf"));
  ASSERT_EQ(r.tensors().size(), nested.tensors().size());
  for (size_t i = 0; i < r.tensors().size(); ++i) {
    EXPECT_EQ(r.tensors()[i].name, nested.tensors()[i].name);
    EXPECT_EQ(values(r.tensors()[i]), values(nested.tensors()[i])) << r.tensors()[i].name;
  }
  EXPECT_EQ(r.get_u32("qwen35.block_count"), 5u);
}

TEST_F(GdnConvert, MtpInOutAndRequired) {
  synth("qwen35", /*mtp=*/true, "m", DType::kF32);
  const GgufReader plain(synth("qwen35", /*mtp=*/false, "p", DType::kF32, /*hf=*/true));
  // --no-mtp on the MTP export: exactly the trunk-only model (weights are seeded by name).
  const GgufReader trunk(convert(path("m_hf"), MtpMode::kExclude, DType::kF32, "trunk.gguf"));
  expect_same_file(plain, trunk);
  EXPECT_EQ(trunk.get_u32("qwen35.block_count"), 4u);
  EXPECT_FALSE(trunk.has("qwen35.nextn_predict_layers"));
  // --mtp: included; required.
  const GgufReader with(convert(path("m_hf"), MtpMode::kInclude, DType::kF32, "with.gguf"));
  EXPECT_EQ(with.get_u32("qwen35.block_count"), 5u);
  EXPECT_NE(with.find_tensor("blk.4.nextn.eh_proj.weight"), nullptr);
  expect_failure(path("p_hf"), {"--mtp", "mtp_num_hidden_layers"}, MtpMode::kInclude);
  // --mtp on an architecture without MTP export.
  test::write_tiny(path("dense_hf"), test::make_tiny(test::TinySpec{}));
  expect_failure(path("dense_hf"), {"--mtp", "Qwen3ForCausalLM", "no MTP"}, MtpMode::kInclude);
  // The config says 1 but the checkpoint has no mtp.* tensors (a stripped release): trunk only.
  Export stripped(path("m_hf"));
  std::erase_if(stripped.tensors, [](const HfTensor& t) { return t.name.starts_with("mtp."); });
  stripped.write(path("stripped_hf"));
  expect_same_file(plain, GgufReader(convert(path("stripped_hf"), MtpMode::kAuto, DType::kF32, "stripped.gguf")));
}

TEST_F(GdnConvert, BadInputIsAClearErrorWithNoOutput) {
  synth("qwen35", /*mtp=*/true, "m", DType::kF32);
  const std::string bad = path("bad_hf");
  auto edit = [&](const std::function<void(Export&)>& f) {
    Export e(path("m_hf"));
    f(e);
    e.write(bad);
  };
  // An incomplete MTP block.
  edit([](Export& e) { e.erase("mtp.layers.0.self_attn.k_proj.weight"); });
  expect_failure(bad, {"missing tensor", "mtp.layers.0.self_attn.k_proj.weight", "blk.4.attn_k.weight"});
  edit([](Export& e) { e.erase("mtp.fc.weight"); });
  expect_failure(bad, {"missing tensor", "mtp.fc.weight", "nextn.eh_proj"});
  // MTP tensors the config does not announce, and more MTP blocks than llama.cpp runs.
  edit([](Export& e) { e.config["text_config"]["mtp_num_hidden_layers"] = 0; });
  expect_failure(bad, {"mtp.", "mtp_num_hidden_layers"});
  edit([](Export& e) { e.config["text_config"]["mtp_num_hidden_layers"] = 2; });
  expect_failure(bad, {"mtp_num_hidden_layers is 2"});
  // Wrong shapes: the config's V heads disagree with the checkpoint.
  edit([](Export& e) { e.config["text_config"]["linear_num_value_heads"] = 8; });
  expect_failure(bad, {"in_proj_qkv.weight", "[256, 256]", "[384, 256]"});
  edit([](Export& e) { e.find("mtp.fc.weight")->shape = {kE * 2, kE}; });
  expect_failure(bad, {"mtp.fc.weight", "[512, 256]", "[256, 512]"});
  // Inconsistent configs.
  edit([](Export& e) { e.config["text_config"]["linear_num_value_heads"] = 3; });
  expect_failure(bad, {"linear_num_value_heads", "linear_num_key_heads"});
  edit([](Export& e) { e.config["text_config"]["layer_types"][1] = "full_attention"; });
  expect_failure(bad, {"layer_types[1]", "full_attention_interval"});
  edit([](Export& e) { e.config["text_config"]["attn_output_gate"] = false; });
  expect_failure(bad, {"attn_output_gate"});
  edit([](Export& e) { e.config["text_config"].erase("linear_conv_kernel_dim"); });
  expect_failure(bad, {"text_config.linear_conv_kernel_dim", "missing"});
  edit([](Export& e) { e.config["text_config"]["mtp_use_dedicated_embeddings"] = true; });
  expect_failure(bad, {"mtp_use_dedicated_embeddings"});
  // An unexpected tensor.
  edit([](Export& e) { e.tensors.push_back({"model.language_model.layers.0.linear_attn.extra", {2}, {1, 2}}); });
  expect_failure(bad, {"unexpected tensor", "linear_attn.extra"});
}

// Qwen3-Next: in_proj_qkvz regrouped by slices (recomputed here group by group), in_proj_ba and
// the V heads kept in HF's grouped order, and the MoE with its gated shared expert.
TEST_F(GdnConvert, Qwen3NextValuesRecomputedFromTheCheckpoint) {
  synth("qwen3next", /*mtp=*/true, "n", DType::kF32);
  const Checkpoint ck(path("n_hf"));
  const GgufReader r(convert(path("n_hf")));
  auto hf = [&](const std::string& n) { return ck.to_f32("model.layers.0." + n); };
  auto gg = [&](const std::string& n) { return values(r.tensor("blk.0." + n)); };
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
  EXPECT_EQ(values(r.tensor("blk.4.ffn_gate_inp.weight")), ck.to_f32("mtp.layers.0.mlp.gate.weight"));
  EXPECT_EQ(values(r.tensor("blk.4.nextn.eh_proj.weight")), ck.to_f32("mtp.fc.weight"));
}

// Released Qwen3.5-MoE checkpoints store the experts fused (mlp.experts.gate_up_proj [N, 2F, E],
// gate rows first, and down_proj [N, E, F]): the same GGUF as the per-expert form.
TEST_F(GdnConvert, Qwen35MoeFusedExperts) {
  synth("qwen35moe", /*mtp=*/true, "m", DType::kF32);
  const GgufReader per_expert(convert(path("m_hf"), MtpMode::kAuto, DType::kF32, "per_expert.gguf"));
  Export fused(path("m_hf"));
  const int64_t N = 8, F = 128;
  std::vector<std::string> prefixes = {"mtp.layers.0.mlp.experts."};
  for (int64_t i = 0; i < kLayers; ++i) prefixes.push_back(cat("model.language_model.layers.", i, ".mlp.experts."));
  for (const std::string& ex : prefixes) {
    HfTensor gate_up{ex + "gate_up_proj", {N, 2 * F, kE}, {}}, down{ex + "down_proj", {N, kE, F}, {}};
    for (int64_t j = 0; j < N; ++j) {
      for (const char* w : {"gate_proj", "up_proj"}) {
        const std::vector<float>& v = fused.find(cat(ex, j, ".", w, ".weight"))->data;
        gate_up.data.insert(gate_up.data.end(), v.begin(), v.end());
      }
      const std::vector<float>& d = fused.find(cat(ex, j, ".down_proj.weight"))->data;
      down.data.insert(down.data.end(), d.begin(), d.end());
      for (const char* w : {"gate_proj", "up_proj", "down_proj"}) fused.erase(cat(ex, j, ".", w, ".weight"));
    }
    fused.tensors.push_back(std::move(gate_up));
    fused.tensors.push_back(std::move(down));
  }
  fused.write(path("fused_hf"));
  expect_same_file(per_expert, GgufReader(convert(path("fused_hf"), MtpMode::kAuto, DType::kF32, "fused.gguf")));
}

TEST_F(GdnConvert, MoeConfigsLlamaCppCannotRun) {
  synth("qwen3next", /*mtp=*/false, "n", DType::kF32);
  const std::string bad = path("bad_hf");
  auto edit = [&](const char* key, const Json& value) {
    Export e(path("n_hf"));
    e.config[key] = value;
    e.write(bad);
  };
  edit("norm_topk_prob", false);
  expect_failure(bad, {"norm_topk_prob is false", "qwen3next"});
  edit("decoder_sparse_step", 2);
  expect_failure(bad, {"decoder_sparse_step is 2"});
  edit("mlp_only_layers", Json::array({1}));
  expect_failure(bad, {"mlp_only_layers"});
  edit("num_experts_per_tok", 9);
  expect_failure(bad, {"num_experts_per_tok 9", "num_experts 8"});
  edit("shared_expert_intermediate_size", 64);
  expect_failure(bad, {"shared_expert.gate_proj.weight", "[128, 256]", "[64, 256]"});
}

}  // namespace
}  // namespace fulgur
