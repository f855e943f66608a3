// The Nemotron-H MTP head through the converter (llama.cpp's NemotronH MTP export): the tiny
// checkpoint `fulgur synth --mtp --hf` writes converts back to the synthetic GGUF tensor for
// tensor; the MTP block's GGUF tensors hold the HF mtp.layers.0 / mtp.layers.1 tensors under
// llama.cpp's names (checked against the checkpoint by hand, independently of the plan both
// share) with the keys that mark the block; --no-mtp gives the file without it; --mtp on a
// Puzzle checkpoint or one without a head, and inconsistent heads, are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "convert/synth_convert_fixture.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"

namespace fulgur {
namespace {

using Json = nlohmann::json;
using NemotronMtpConvert = test::SynthConvertTest;
using test::drop_tensor;
using test::expect_same_gguf;
using test::values_of;

TEST_F(NemotronMtpConvert, SynthIsTheConversionOfItsExport) {
  for (const std::string arch : {"nemotron_h", "nemotron_h_moe"}) {
    for (const DType type : {DType::kF32, DType::kQ8_0}) {
      SCOPED_TRACE(arch + " " + std::string(dtype_name(type)));
      const std::string name = arch + "-mtp-" + std::string(dtype_name(type));
      const std::string synth_file = synth(arch, "tiny", type, name, 0, true);
      expect_same_gguf(synth_file, convert(path(name + "-hf"), type, name + "-c.gguf"));
      expect_same_gguf(synth_file, convert(path(name + "-hf"), type, name + "-m.gguf", 0, MtpMode::kInclude));
      // --no-mtp: the file synth writes without the block.
      const std::string plain = synth(arch, "tiny", type, name + "-plain");
      expect_same_gguf(plain, convert(path(name + "-hf"), type, name + "-n.gguf", 0, MtpMode::kExclude));
    }
  }
}

// The block's layout against the checkpoint, tensor by tensor: blk.6 = the 6-layer trunk's MTP
// block, its nextn tensors and its attention and feed-forward under the trunk's names.
TEST_F(NemotronMtpConvert, BlockHoldsTheCheckpointsMtpTensors) {
  for (const std::string arch : {"nemotron_h", "nemotron_h_moe"}) {
    SCOPED_TRACE(arch);
    synth(arch, "tiny", DType::kF32, arch, 0, true);
    const std::string hf = path(arch + "-hf");
    const Checkpoint ck(hf);
    const GgufReader r(convert(hf, DType::kF32, arch + ".gguf"));
    const std::string a = arch + ".";
    EXPECT_EQ(r.get_u32(a + "block_count"), 7u);
    EXPECT_EQ(r.get_u32(a + "nextn_predict_layers"), 1u);
    EXPECT_EQ(r.get_int_array<int64_t>(a + "attention.head_count_kv").at(6), 2);
    EXPECT_EQ(r.get_int_array<int64_t>(a + "feed_forward_length").at(6), arch == "nemotron_h" ? 512 : 128);
    const BlockLayout layout = read_block_layout(r);
    EXPECT_EQ(layout.n_trunk(), 6);
    std::vector<std::pair<std::string, std::string>> pairs = {
        {"mtp.layers.0.enorm.weight", "blk.6.nextn.enorm.weight"},
        {"mtp.layers.0.hnorm.weight", "blk.6.nextn.hnorm.weight"},
        {"mtp.layers.0.eh_proj.weight", "blk.6.nextn.eh_proj.weight"},
        {"mtp.layers.0.norm.weight", "blk.6.attn_norm.weight"},
        {"mtp.layers.0.mixer.q_proj.weight", "blk.6.attn_q.weight"},
        {"mtp.layers.0.mixer.o_proj.weight", "blk.6.attn_output.weight"},
        {"mtp.layers.1.norm.weight", "blk.6.post_attention_norm.weight"},
        {"mtp.layers.1.final_layernorm.weight", "blk.6.nextn.shared_head_norm.weight"}};
    if (arch == "nemotron_h") {
      pairs.push_back({"mtp.layers.1.mixer.up_proj.weight", "blk.6.ffn_up.weight"});
      pairs.push_back({"mtp.layers.1.mixer.down_proj.weight", "blk.6.ffn_down.weight"});
    } else {
      pairs.push_back({"mtp.layers.1.mixer.gate.weight", "blk.6.ffn_gate_inp.weight"});
      pairs.push_back({"mtp.layers.1.mixer.gate.e_score_correction_bias", "blk.6.exp_probs_b.bias"});
      pairs.push_back({"mtp.layers.1.mixer.shared_experts.up_proj.weight", "blk.6.ffn_up_shexp.weight"});
    }
    for (const auto& [hf_name, gguf_name] : pairs) {
      SCOPED_TRACE(hf_name);
      EXPECT_EQ(values_of(r.tensor(gguf_name)), ck.to_f32(hf_name));
    }
    // HF eh_proj is a Linear [E, 2E] over [embedding ; hidden]: GGUF {2E, E}, the same bytes.
    EXPECT_EQ(r.tensor("blk.6.nextn.eh_proj.weight").shape(), (std::vector<int64_t>{512, 256}));
    if (arch == "nemotron_h_moe") {  // expert 5's rows of the stacked up-projection
      const std::vector<float> up = values_of(r.tensor("blk.6.ffn_up_exps.weight"));
      const std::vector<float> e5 = ck.to_f32("mtp.layers.1.mixer.experts.5.up_proj.weight");
      EXPECT_EQ(std::vector<float>(up.begin() + 5 * e5.size(), up.begin() + 6 * e5.size()), e5);
    }
  }
}

TEST_F(NemotronMtpConvert, BadMtpInputsAreNamed) {
  synth("nemotron_h_moe", "tiny", DType::kF32, "u", 0, true);
  synth("nemotron_h_moe", "tiny", DType::kF32, "plain");
  synth("nemotron_h_moe", "tiny-puzzle", DType::kF32, "p");
  const std::string u = path("u-hf");
  // --mtp on a Puzzle checkpoint: its head is laid out by mtp_block_configs, not converted. The
  // Puzzle class is refused before planning; a NemotronHForCausalLM config with block_configs
  // (also Puzzle) by the plan.
  expect_failure(with_config(path("p-hf"), "puzzle", [](Json& c) { c["num_nextn_predict_layers"] = 1; }),
                 {"--mtp", "NemotronHPuzzleForCausalLM", "no MTP block fulgur can export"}, MtpMode::kInclude);
  expect_failure(with_config(path("p-hf"), "puzzle-h", [](Json& c) {
                   c["num_nextn_predict_layers"] = 1;
                   c["architectures"] = {"NemotronHForCausalLM"};
                 }),
                 {"--mtp", "Puzzle", "mtp_block_configs"}, MtpMode::kInclude);
  // --mtp on a checkpoint without a head.
  expect_failure(path("plain-hf"), {"--mtp", "no MTP block", "num_nextn_predict_layers"}, MtpMode::kInclude);
  // mtp.* tensors the config does not declare; two heads; a head of another pattern; a head
  // tensor missing.
  expect_failure(with_config(u, "undeclared", [](Json& c) { c.erase("num_nextn_predict_layers"); }),
                 {"mtp.* tensors", "num_nextn_predict_layers is 0 or absent"});
  expect_failure(with_config(u, "two", [](Json& c) { c["num_nextn_predict_layers"] = 2; }),
                 {"num_nextn_predict_layers is 2", "at most one"});
  expect_failure(with_config(u, "pattern", [](Json& c) { c["mtp_hybrid_override_pattern"] = "*-"; }),
                 {"mtp_hybrid_override_pattern is '*-'", "'*E'"});
  expect_failure(with_tensors(u, "no-final", [](std::vector<HfTensor>& ts) {
                   drop_tensor(ts, "mtp.layers.1.final_layernorm.weight");
                 }),
                 {"mtp.layers.1.final_layernorm.weight", "blk.6.nextn.shared_head_norm.weight"});
}

}  // namespace
}  // namespace fulgur
