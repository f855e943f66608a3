// compressed-tensors NVFP4 checkpoints -> GGUF NVFP4 tensors (convert/nvfp4_checkpoint.h), for
// a dense target: the GGUF blocks hold exactly the checkpoint's codes and scales (the values
// recomputed from the format's definition in tests/convert/nvfp4_test_util.h), the `.scale`
// sidecar is 1 / weight_global_scale, the model computes what its dequantized float twin
// computes, and every malformed piece is refused by name. Also: `model.lm_head.weight`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/nvfp4_test_util.h"
#include "convert/tiny_checkpoint.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "kernels/dispatch.h"
#include "model/context.h"
#include "model/model.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using test::Nvfp4Weight;

class Nvfp4Convert : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir("fulgur_nvfp4");
    spec_.n_ff = 128;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // The linears of every layer, by HF name.
  std::set<std::string> linears() const {
    std::set<std::string> out;
    for (int64_t l = 0; l < spec_.n_layer; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      for (const char* n : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                            "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
        out.insert(p + n + ".weight");
      }
    }
    return out;
  }

  // Writes the tiny model under `name`, quantizes its linears, declares NVFP4 in config.json;
  // `floats` gets the format's values of every quantized tensor.
  std::map<std::string, Nvfp4Weight> write_nvfp4(const std::string& name, bool pow2_global,
                                                 std::map<std::string, std::vector<float>>* floats = nullptr) {
    test::write_tiny(path(name), model_);
    auto q = test::quantize_checkpoint(path(name), linears(), pow2_global, floats);
    edit_config(name, [](nlohmann::json& c) {
      c["quantization_config"] = test::nvfp4_quantization_config({"lm_head"});
    });
    return q;
  }
  void edit_config(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    const std::string cfg = path(name) + "/config.json";
    nlohmann::json j = HfConfig::load(cfg).json();
    edit(j);
    write_json_file(cfg, j);
  }
  std::string convert(const std::string& name, DType type) {
    ConvertOptions o;
    o.in_dir = path(name);
    o.out_path = path(name + ".gguf");
    o.type = type;
    o.progress = false;
    convert_hf_to_gguf(o);
    return o.out_path;
  }
  void expect_refused(const std::string& name, const std::string& needle) {
    try {
      convert(name, DType::kF16);
      ADD_FAILURE() << name << ": converted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(path(name + ".gguf"))) << name;
  }

  std::string dir_;
  test::TinySpec spec_;
  test::TinyModel model_ = test::make_tiny(spec_);
};

// GGUF name of an HF linear.
std::string gguf_name(const std::string& hf) {
  static const std::map<std::string, std::string> kMap = {
      {"self_attn.q_proj", "attn_q"},  {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"}};
  const size_t a = std::string("model.layers.").size(), b = hf.find('.', a);
  const std::string layer = hf.substr(a, b - a), mod = hf.substr(b + 1, hf.size() - b - 1 - 7);
  return "blk." + layer + "." + kMap.at(mod) + ".weight";
}

TEST_F(Nvfp4Convert, BlocksHoldTheCheckpointsCodesAndScales) {
  for (bool pow2 : {true, false}) {
    SCOPED_TRACE(pow2 ? "power-of-two global scales" : "arbitrary global scales");
    const std::string name = pow2 ? "pow2" : "any";
    const auto q = write_nvfp4(name, pow2);
    const GgufReader r(convert(name, DType::kF16));
    for (const auto& [hf, w] : q) {
      SCOPED_TRACE(hf);
      const GgufTensorInfo& t = r.tensor(gguf_name(hf));
      ASSERT_EQ(t.type, DType::kNVFP4);
      ASSERT_EQ(t.shape(), (std::vector<int64_t>{w.cols, w.rows}));
      const GgufTensorInfo& s = r.tensor(gguf_name(hf).substr(0, gguf_name(hf).size() - 7) + ".scale");
      ASSERT_EQ(s.type, DType::kF32);
      ASSERT_EQ(s.n_elements(), 1);
      float scale = 0.0f;
      std::memcpy(&scale, s.data, 4);
      EXPECT_EQ(scale, 1.0f / w.global);
      std::vector<float> row(static_cast<size_t>(w.cols));  // [cols] block values
      const size_t rb = row_bytes(DType::kNVFP4, w.cols);
      for (int64_t i = 0; i < w.rows; ++i) {
        dequantize_row(DType::kNVFP4, t.data + i * rb, row.data(), w.cols);
        for (int64_t c = 0; c < w.cols; ++c) {
          // e2m1 * e4m3 is exact in f32: the block part must match bit for bit.
          ASSERT_EQ(row[c], test::e2m1(w.code(i, c)) * test::e4m3(w.scale(i, c)))
              << "row " << i << " col " << c;
          // With a power-of-two global scale the whole product is exact too.
          if (pow2) {
            ASSERT_EQ(row[c] * scale, w.value(i, c)) << "row " << i << " col " << c;
          }
        }
      }
    }
    // Untouched tensors follow --type; the ignored lm_head stays a float tensor.
    EXPECT_EQ(r.tensor("output.weight").type, DType::kF16);
    EXPECT_EQ(r.tensor("blk.0.attn_norm.weight").type, DType::kF32);
  }
}

// The NVFP4 GGUF and the GGUF of the dequantized checkpoint compute the same logits: to float
// rounding with the scalar kernels (which multiply NVFP4 blocks by f32 activations), and up to
// the int8 rounding of activations with the SIMD ones. A missing or misnamed `.scale` would be
// off by the global scale (~10^3 here). Measured (max |diff| / spread of the last logits): ref
// 6.5e-7, avx512 1.1e-2; the bars are ~15x and ~4.5x that.
TEST_F(Nvfp4Convert, SameLogitsAsTheDequantizedCheckpoint) {
  std::map<std::string, std::vector<float>> floats;
  write_nvfp4("q", false, &floats);
  test::write_tiny(path("f"), model_);
  test::replace_floats(path("f"), floats);
  const Model mq(convert("q", DType::kF32)), mf(convert("f", DType::kF32));
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65, 35, 89, 79};
  auto last_logits = [&](const Model& m) {
    Context ctx(m, {.n_ctx = 64, .n_batch = 64, .n_threads = 1});
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
    ctx.decode(b);
    const float* l = ctx.logits(b.size() - 1);
    return std::vector<float>(l, l + m.n_vocab());
  };
  const Isa best = kernels::active_isa();
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    kernels::set_active_isa(isa);
    const std::vector<float> a = last_logits(mq), b = last_logits(mf);
    float lo = b[0], hi = b[0], worst = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) {
      lo = std::min(lo, b[i]);
      hi = std::max(hi, b[i]);
      worst = std::max(worst, std::fabs(a[i] - b[i]));
    }
    const float bar = isa == Isa::kRef ? 1e-5f : 5e-2f;
    EXPECT_LT(worst, bar * (hi - lo)) << isa_name(isa) << ": max |diff| " << worst
                                      << " over a spread of " << hi - lo;
  }
  kernels::set_active_isa(best);
}

// Rows that do not fill 64-element GGUF blocks are written from their dequantized values.
TEST_F(Nvfp4Convert, ShortRowsFallBackToTheRequestedType) {
  spec_.n_ff = 80;  // down_proj rows of 80: a multiple of 16, not of 64
  model_ = test::make_tiny(spec_);
  std::map<std::string, std::vector<float>> floats;
  write_nvfp4("short", false, &floats);
  const GgufReader r(convert("short", DType::kF32));
  const GgufTensorInfo& down = r.tensor("blk.0.ffn_down.weight");
  EXPECT_EQ(down.type, DType::kF32);
  EXPECT_EQ(r.find_tensor("blk.0.ffn_down.scale"), nullptr);
  const std::vector<float>& want = floats.at("model.layers.0.mlp.down_proj.weight");
  ASSERT_EQ(static_cast<size_t>(down.n_elements()), want.size());
  EXPECT_EQ(std::memcmp(down.data, want.data(), want.size() * 4), 0);
  EXPECT_EQ(r.tensor("blk.0.ffn_gate.weight").type, DType::kNVFP4);
}

TEST_F(Nvfp4Convert, MalformedCheckpointsAreRefused) {
  write_nvfp4("noconfig", false);
  edit_config("noconfig", [](nlohmann::json& c) { c.erase("quantization_config"); });
  expect_refused("noconfig", "quantization_config");

  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> edit;
    const char* needle;
  };
  const Case cases[] = {
      {"awq", [](nlohmann::json& q) { q["quant_method"] = "awq"; }, "quant_method"},
      {"int4", [](nlohmann::json& q) { q["config_groups"]["group_0"]["format"] = "pack-quantized"; },
       "pack-quantized"},
      {"bits", [](nlohmann::json& q) { q["config_groups"]["group_0"]["weights"]["num_bits"] = 8; },
       "num_bits"},
      {"group", [](nlohmann::json& q) { q["config_groups"]["group_0"]["weights"]["group_size"] = 32; },
       "group_size"},
      {"transform", [](nlohmann::json& q) { q["transform_config"] = {{"hadamard", 1}}; },
       "transform_config"},
      {"frozen", [](nlohmann::json& q) { q["quantization_status"] = "frozen"; }, "frozen"},
  };
  for (const Case& c : cases) {
    write_nvfp4(c.name, false);
    edit_config(c.name, [&](nlohmann::json& j) { c.edit(j["quantization_config"]); });
    expect_refused(c.name, c.needle);
  }

  // A NaN and a negative block scale, a wrong scale shape, and a float twin beside the packed
  // weight.
  auto tamper = [&](const std::string& name, const std::function<void(SafetensorsWriter&, const SafetensorsTensor&)>& put) {
    write_nvfp4(name, false);
    SafetensorsWriter w;
    {
      const Checkpoint ck(path(name));
      for (const std::string& n : ck.names()) put(w, ck.tensor(n));
    }
    w.write(path(name) + "/model.safetensors");
  };
  const std::string scale = "model.layers.0.self_attn.q_proj.weight_scale";
  auto copy = [](SafetensorsWriter& w, const SafetensorsTensor& t) {
    w.add(t.name, t.dtype, t.shape, {t.data, t.bytes});
  };
  for (uint8_t bad : {uint8_t{0x7F}, uint8_t{0xB8}}) {
    const std::string name = bad == 0x7F ? "nan" : "negative";
    tamper(name, [&](SafetensorsWriter& w, const SafetensorsTensor& t) {
      if (t.name != scale) return copy(w, t);
      std::vector<uint8_t> bytes(t.data, t.data + t.bytes);
      bytes[1] = bad;
      w.add(t.name, t.dtype, t.shape, bytes);
    });
    expect_refused(name, bad == 0x7F ? "NaN" : "negative");
  }
  tamper("shape", [&](SafetensorsWriter& w, const SafetensorsTensor& t) {
    if (t.name != scale) return copy(w, t);
    w.add(t.name, t.dtype, {t.shape[0] * t.shape[1]}, {t.data, t.bytes});
  });
  expect_refused("shape", "weight_scale");
  tamper("twin", [&](SafetensorsWriter& w, const SafetensorsTensor& t) {
    copy(w, t);
    if (t.name == scale) w.add_f32("model.layers.0.self_attn.q_proj.weight", {64, 64}, std::vector<float>(64 * 64));
  });
  expect_refused("twin", "contradictory");
}

// Some exports nest the LM head under model.; it is the same tensor.
TEST_F(Nvfp4Convert, NestedLmHeadName) {
  test::write_tiny(path("plain"), model_);
  test::write_tiny(path("nested"), model_);
  SafetensorsWriter w;
  {
    const Checkpoint ck(path("nested"));
    for (const std::string& n : ck.names()) {
      const SafetensorsTensor& t = ck.tensor(n);
      w.add(n == "lm_head.weight" ? "model.lm_head.weight" : n, t.dtype, t.shape, {t.data, t.bytes});
    }
  }
  w.write(path("nested") + "/model.safetensors");
  const GgufReader a(convert("plain", DType::kF32)), b(convert("nested", DType::kF32));
  const GgufTensorInfo &ta = a.tensor("output.weight"), &tb = b.tensor("output.weight");
  ASSERT_EQ(ta.nbytes, tb.nbytes);
  EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.nbytes), 0);
}

}  // namespace
}  // namespace fulgur
