// The MoE and hybrid archs through the fulgur binary: synth (GGUF and --hf), convert of the
// export, inspect of the result (text and JSON), and bad input ending in exit status 1 with the
// error on stderr and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_test_util.h"
#include "convert/hf_config.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using test::run_fulgur;
using test::RunResult;

void expect_pieces(const std::string& text, const std::vector<std::string>& pieces) {
  for (const std::string& p : pieces) EXPECT_NE(text.find(p), std::string::npos) << "missing '" << p << "' in\n" << text;
}

TEST(ArchsCli, SynthConvertInspect) {
  const std::string dir = test::make_cli_temp_dir();
  struct Case {
    std::string arch, shape;
    std::vector<std::string> text;  // pieces of `inspect` output
  };
  const Case cases[] = {
      {"qwen3moe", "tiny",
       {"qwen3moe.expert_count", "qwen3moe.expert_used_count", "qwen3moe.expert_feed_forward_length",
        "blk.1.ffn_gate_exps.weight", "[256, 128, 16]", "blk.1.ffn_down_exps.weight", "[128, 256, 16]",
        "blk.0.ffn_gate_inp.weight"}},
      {"nemotron_h", "tiny",
       {"nemotron_h.ssm.inner_size", "nemotron_h.attention.layer_norm_epsilon", "ARRAY[INT32](6)",
        "[0, 512, 0, 0, 512, 0]", "[0, 0, 0, 2, 0, 0]", "blk.0.ssm_a ", "[1, 8]", "blk.0.ssm_norm.weight",
        "[128, 2]", "blk.0.ssm_conv1d.weight", "[4, 320]", "output.weight"}},
      {"nemotron_h_moe", "tiny-puzzle",
       {"nemotron_h_moe.expert_used_count", "[0, 4, 0, 2, 0, 6]", "[0, 128, 0, 64, 0, 96]",
        "nemotron_h_moe.moe_latent_size", "blk.3.ffn_up_exps.weight", "[128, 64, 16]",
        "blk.1.exp_probs_b.bias", "blk.5.ffn_latent_up.weight"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arch + " " + c.shape);
    const std::string gguf = dir + "/" + c.arch + ".gguf", hf = dir + "/" + c.arch + "-hf";
    const RunResult s = run_fulgur("synth --arch " + c.arch + " --shape " + c.shape +
                                       " --type q8_0 --tokenizer builtin -o '" + gguf + "' --hf '" + hf + "'", dir);
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_TRUE(fs::exists(hf + "/config.json") && fs::exists(hf + "/model.safetensors"));
    const std::string conv = dir + "/" + c.arch + "-conv.gguf";
    const RunResult v = run_fulgur("convert '" + hf + "' -o '" + conv + "' --type q8_0 --no-progress", dir);
    ASSERT_EQ(v.status, 0) << v.err;
    for (const std::string& file : {gguf, conv}) {
      const RunResult i = run_fulgur("inspect '" + file + "'", dir);
      ASSERT_EQ(i.status, 0) << i.err;
      expect_pieces(i.out, c.text);
    }
    const RunResult j = run_fulgur("inspect --json '" + conv + "'", dir);
    ASSERT_EQ(j.status, 0) << j.err;
    const nlohmann::json parsed = nlohmann::json::parse(j.out);
    EXPECT_EQ(parsed["metadata"]["general.architecture"], c.arch);
  }
  fs::remove_all(dir);
}

TEST(ArchsCli, BadInputExitsOneWithoutOutput) {
  const std::string dir = test::make_cli_temp_dir();
  const std::string hf = dir + "/hf";
  ASSERT_EQ(run_fulgur("synth --arch nemotron_h_moe --shape tiny --tokenizer builtin -o '" + dir +
                           "/m.gguf' --hf '" + hf + "'", dir).status, 0);
  nlohmann::json c = HfConfig::load(hf).json();
  c["hybrid_override_pattern"] = "MEM*E";
  write_json_file(hf + "/config.json", c);
  const RunResult r = run_fulgur("convert '" + hf + "' -o '" + dir + "/bad.gguf' --no-progress", dir);
  EXPECT_EQ(r.status, 1);
  expect_pieces(r.err, {"fulgur: error:", "hybrid_override_pattern 'MEM*E' has 5 entries", "num_hidden_layers is 6"});
  EXPECT_FALSE(fs::exists(dir + "/bad.gguf"));

  const RunResult shape = run_fulgur("synth --arch nemotron_h_moe --shape 0.6b -o '" + dir + "/x.gguf'", dir);
  EXPECT_EQ(shape.status, 1);
  expect_pieces(shape.err, {"nemotron_h_moe has no shape '0.6b'", "tiny, tiny-puzzle, nano-l8"});
  const RunResult arch = run_fulgur("synth --arch mamba --shape tiny -o '" + dir + "/x.gguf'", dir);
  EXPECT_EQ(arch.status, 1);
  expect_pieces(arch.err, {"unknown arch 'mamba'", "qwen3moe", "nemotron_h_moe"});
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fulgur
