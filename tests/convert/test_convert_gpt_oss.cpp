// gpt-oss through the converter (convert/gpt_oss_arch.h): synth's HF export converts to synth's
// GGUF byte for byte; the experts' transposed, interleaved layout by hand (each value of the
// checkpoint's gate_up_proj, down_proj and gate_up_proj_bias set to its own flat index, and
// found where llama.cpp's converter puts it); MXFP4 checkpoints and bad configs refused by name.
#include <gtest/gtest.h>

#include <numeric>

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

TEST_F(GptOssConvertTest, RefusedByName) {
  synth("gpt-oss", "tiny", DType::kF32, "oss");
  // The released checkpoints' MXFP4 experts.
  expect_failure(with_tensors(path("oss-hf"), "mxfp4",
                              [](std::vector<HfTensor>& ts) {
                                ts.push_back({"model.layers.0.mlp.experts.gate_up_proj_blocks", {1}, {0.0f}});
                              }),
                 {"gate_up_proj_blocks", "MXFP4"});
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
