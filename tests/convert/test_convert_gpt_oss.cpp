// gpt-oss through the converter (convert/gpt_oss_arch.h): synth's HF export converts to synth's
// GGUF byte for byte; the experts' transposed, interleaved layout by hand (each value of the
// checkpoint's gate_up_proj, down_proj and gate_up_proj_bias set to its own flat index, and
// found where llama.cpp's converter puts it); the released MXFP4 form (gpt_oss_release_form.h)
// converts to what its float form converts to (MXFP4 blocks bit for bit under a float --type,
// the same file under a quantized one); broken MXFP4 pairs and bad configs refused by name.
#include <gtest/gtest.h>

#include <numeric>

#include "gpt_oss_release_form.h"
#include "synth_convert_fixture.h"

namespace fulgur::test {
namespace {

class GptOssConvertTest : public SynthConvertTest {};

TEST_F(GptOssConvertTest, SynthEqualsConvertOfItsHfExport) {
  for (const DType type : {DType::kF32, DType::kQ8_0}) {
    SCOPED_TRACE(dtype_name(type));
    const std::string synth_path = synth("gpt-oss", "tiny", type, "oss");
    expect_same_gguf(synth_path, convert(path("oss-hf"), type));
  }
}

TEST_F(GptOssConvertTest, ExpertLayoutByHand) {
  synth("gpt-oss", "tiny", DType::kF32, "oss");
  const int64_t N = 8, E = 128, F = 128;
  const std::string ex = "model.layers.1.mlp.experts.";
  const std::string hf = with_tensors(path("oss-hf"), "indexed", [&](std::vector<HfTensor>& ts) {
    for (const char* name : {"gate_up_proj", "down_proj", "gate_up_proj_bias"}) {
      std::vector<float>& d = tensor_named(ts, ex + name).data;
      std::iota(d.begin(), d.end(), 0.0f);  // exact in f32 below 2^24
    }
  });
  const GgufReader g(convert(hf, DType::kF32));
  const std::vector<float> gate = values_of(g.tensor("blk.1.ffn_gate_exps.weight"));  // [N][F][E]
  const std::vector<float> up = values_of(g.tensor("blk.1.ffn_up_exps.weight"));
  const std::vector<float> down = values_of(g.tensor("blk.1.ffn_down_exps.weight"));  // [N][E][F]
  const std::vector<float> gate_b = values_of(g.tensor("blk.1.ffn_gate_exps.bias"));  // [N][F]
  const std::vector<float> up_b = values_of(g.tensor("blk.1.ffn_up_exps.bias"));
  for (const int64_t j : {int64_t{0}, int64_t{5}}) {
    for (const int64_t f : {int64_t{0}, int64_t{3}, F - 1}) {
      for (const int64_t e : {int64_t{0}, int64_t{7}, E - 1}) {
        // gate_up_proj[j][e][2f] and [2f + 1]; down_proj[j][f][e].
        EXPECT_EQ(gate[(j * F + f) * E + e], static_cast<float>((j * E + e) * 2 * F + 2 * f));
        EXPECT_EQ(up[(j * F + f) * E + e], static_cast<float>((j * E + e) * 2 * F + 2 * f + 1));
        EXPECT_EQ(down[(j * E + e) * F + f], static_cast<float>((j * F + f) * E + e));
      }
      EXPECT_EQ(gate_b[j * F + f], static_cast<float>(j * 2 * F + 2 * f));
      EXPECT_EQ(up_b[j * F + f], static_cast<float>(j * 2 * F + 2 * f + 1));
    }
  }
  (void)N;
}

// The released form against the float form of the same (MXFP4-rounded) values. Under f32 the
// experts stay MXFP4: each GGUF row is the ggml encoding of the out x in row it comes from (gate:
// the even rows of gate_up, up the odd ones), and its values are the float form's; every other
// tensor and key is the float form's. Under q8_0 the experts are dequantized and quantized as
// the float form's are: the same file, byte for byte.
TEST_F(GptOssConvertTest, ReleasedMxfp4FormConvertsAsItsFloatForm) {
  synth("gpt-oss", "tiny", DType::kF32, "oss");
  const std::map<std::string, Mxfp4Expert> experts =
      write_gpt_oss_release_forms(path("oss-hf"), path("exact-hf"), path("mxfp4-hf"));
  ASSERT_EQ(experts.size(), 8u);  // 4 layers
  const GgufReader a(convert(path("exact-hf"), DType::kF32, "exact.gguf"));
  const GgufReader b(convert(path("mxfp4-hf"), DType::kF32, "mxfp4.gguf"));
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  int n_mxfp4 = 0;
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensorInfo &x = a.tensors()[i], &y = b.tensors()[i];
    SCOPED_TRACE(x.name);
    ASSERT_EQ(x.name, y.name);
    EXPECT_EQ(x.shape(), y.shape());
    if (!x.name.ends_with("_exps.weight")) {
      EXPECT_EQ(x.type, y.type);
      ASSERT_EQ(x.nbytes, y.nbytes);
      EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes), 0);
      continue;
    }
    ++n_mxfp4;
    EXPECT_EQ(x.type, DType::kF32);
    ASSERT_EQ(y.type, DType::kMXFP4);
    EXPECT_EQ(values_of(x), values_of(y));
    // Expected rows: ffn_gate / ffn_up row (j, f) is gate_up's out row (j, 2f) / (j, 2f + 1),
    // ffn_down's row (j, e) down's out row (j, e).
    const std::string layer = x.name.substr(0, x.name.find(".ffn_"));
    const std::string hf = "model.layers." + layer.substr(4) + ".mlp.experts.";
    const bool down = x.name.find("ffn_down") != std::string::npos;
    const Mxfp4Expert& e = experts.at(hf + (down ? "down_proj" : "gate_up_proj"));
    const size_t row = row_bytes(DType::kMXFP4, x.ne[0]);
    const int64_t rows_per_expert = x.ne[1];
    for (int64_t j = 0; j < x.ne[2]; ++j) {
      for (int64_t r = 0; r < rows_per_expert; ++r) {
        const int64_t from = down ? j * rows_per_expert + r
                                  : j * 2 * rows_per_expert + 2 * r + (x.name.find("ffn_up") != std::string::npos);
        ASSERT_EQ(std::memcmp(y.data + (j * rows_per_expert + r) * row, e.ggml.data() + from * row, row), 0)
            << "expert " << j << " row " << r;
      }
    }
  }
  EXPECT_EQ(n_mxfp4, 12);
  for (const GgufKv& kv : a.metadata()) {
    if (kv.key == "general.name") continue;
    const GgufValue* other = b.find(kv.key);
    ASSERT_NE(other, nullptr) << kv.key;
    EXPECT_TRUE(kv.value == *other) << kv.key;
  }
  expect_same_gguf(convert(path("exact-hf"), DType::kQ8_0, "exact_q8.gguf"),
                   convert(path("mxfp4-hf"), DType::kQ8_0, "mxfp4_q8.gguf"));
}

// A pair of raw tensors of an HF folder, edited: the MXFP4 form's defects.
struct RawTensor {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

TEST_F(GptOssConvertTest, RefusesBrokenMxfp4Pairs) {
  synth("gpt-oss", "tiny", DType::kF32, "oss");
  write_gpt_oss_release_forms(path("oss-hf"), path("exact-hf"), path("mxfp4-hf"));
  const auto edited = [&](const std::string& name, const std::function<void(std::vector<RawTensor>&)>& edit,
                          const std::function<void(nlohmann::json&)>& config = [](nlohmann::json&) {}) {
    rewrite_checkpoint(
        path("mxfp4-hf"), path(name),
        [&](const Checkpoint& ck, SafetensorsWriter& w) {
          std::vector<RawTensor> ts;
          for (const std::string& n : ck.names()) {
            const SafetensorsTensor& t = ck.tensor(n);
            ts.push_back({n, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.bytes)});
          }
          edit(ts);
          for (const RawTensor& t : ts) w.add(t.name, t.dtype, t.shape, t.bytes);
        },
        config);
    return path(name);
  };
  const std::string ex = "model.layers.1.mlp.experts.";
  const auto drop = [](const std::string& n) {
    return [n](std::vector<RawTensor>& ts) { std::erase_if(ts, [&](const RawTensor& t) { return t.name == n; }); };
  };
  const auto raw_named = [](std::vector<RawTensor>& ts, const std::string& n) -> RawTensor& {
    for (RawTensor& t : ts) {
      if (t.name == n) return t;
    }
    throw Error("test: no tensor " + n);
  };
  expect_failure(edited("no-scales", drop(ex + "gate_up_proj_scales")),
                 {"'" + ex + "gate_up_proj_blocks' without their scales '" + ex + "gate_up_proj_scales'"});
  expect_failure(edited("no-blocks", drop(ex + "down_proj_blocks")),
                 {"'" + ex + "down_proj_scales' without their codes '" + ex + "down_proj_blocks'"});
  // The same bytes as 8-byte blocks of 16 codes: not the shape [8, 256, 4, 16] gate_up implies.
  expect_failure(edited("blocks-shape", [&](std::vector<RawTensor>& ts) { raw_named(ts, ex + "gate_up_proj_blocks").shape = {8, 256, 8, 8}; }),
                 {ex + "gate_up_proj_blocks", "[8, 256, 8, 8]", "expected U8 [8, 256, 4, 16]"});
  expect_failure(edited("scales-shape", [&](std::vector<RawTensor>& ts) { raw_named(ts, ex + "down_proj_scales").shape = {8, 512}; }),
                 {ex + "down_proj_scales", "[8, 512]", "expected U8 [8, 128, 4]"});
  expect_failure(edited("scales-dtype", [&](std::vector<RawTensor>& ts) { raw_named(ts, ex + "down_proj_scales").dtype = SafetensorsDType::kI8; }),
                 {ex + "down_proj_scales", "expected U8"});
  // A float down_proj beside its MXFP4 form.
  expect_failure(edited("both", [&](std::vector<RawTensor>& ts) {
                   ts.push_back({ex + "down_proj", SafetensorsDType::kF32, {8, 128, 128}, std::vector<uint8_t>(8 * 128 * 128 * 4)});
                 }),
                 {ex + "down_proj", "contradictory"});
  // MXFP4 tensors the config does not declare.
  expect_failure(edited("undeclared", [](std::vector<RawTensor>&) {}, [](nlohmann::json& c) { c.erase("quantization_config"); }),
                 {"gate_up_proj_blocks", "quant_method 'mxfp4'"});
  expect_failure(edited("other-method", [](std::vector<RawTensor>&) {},
                        [](nlohmann::json& c) { c["quantization_config"]["quant_method"] = "awq"; }),
                 {"quant_method is 'awq'", "'mxfp4'"});
}

TEST_F(GptOssConvertTest, RefusedByName) {
  synth("gpt-oss", "tiny", DType::kF32, "oss");
  expect_failure(with_config(path("oss-hf"), "types", [](nlohmann::json& c) { c["layer_types"][0] = "full_attention"; }),
                 {"layer_types[0]", "sliding_attention"});
  expect_failure(with_config(path("oss-hf"), "limit", [](nlohmann::json& c) { c["swiglu_limit"] = 5.0; }),
                 {"swiglu_limit"});
  // A checkpoint whose experts have another shape than the config implies.
  expect_failure(with_tensors(path("oss-hf"), "shape",
                              [](std::vector<HfTensor>& ts) {
                                HfTensor& t = tensor_named(ts, "model.layers.2.mlp.experts.down_proj");
                                t.shape = {8, 64, 256};
                              }),
                 {"model.layers.2.mlp.experts.down_proj", "[8, 128, 128]"});
}

}  // namespace
}  // namespace fulgur::test
