// The MoE and hybrid archs through the fulgur binary: synth (GGUF and --hf), convert of the
// export, inspect of the result (text and JSON), and bad input ending in exit status 1 with the
// error on stderr and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_test_util.h"
#include "convert/hf_config.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

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
  expect_pieces(shape.err, {"nemotron_h_moe has no shape '0.6b'", "tiny, tiny-latent, tiny-puzzle, nano-l8"});
  const RunResult arch = run_fulgur("synth --arch mamba --shape tiny -o '" + dir + "/x.gguf'", dir);
  EXPECT_EQ(arch.status, 1);
  expect_pieces(arch.err, {"unknown arch 'mamba'", "qwen3moe", "nemotron_h_moe"});
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
  fs::remove_all(dir);
}

// The Gated-DeltaNet hybrids with their MTP block: synth --mtp (GGUF and --hf), convert with the
// block (the default) and without it (--no-mtp), inspect's keys, tensors and block layout.
TEST(ArchsCli, HybridsWithAndWithoutMtp) {
  const std::string dir = test::make_cli_temp_dir();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"qwen35", {"qwen35.rope.dimension_sections", "[3, 3, 2, 0]", "blk.0.ssm_beta.weight", "[256, 4]",
                  "blk.0.ssm_alpha.weight", "blk.3.attn_q.weight", "[256, 512]"}},
      {"qwen35moe", {"qwen35moe.expert_shared_feed_forward_length", "blk.0.ffn_gate_exps.weight", "[256, 128, 8]",
                     "blk.4.ffn_gate_inp_shexp.weight", "blk.0.ssm_beta.weight", "output.weight"}},
      {"qwen3next", {"qwen3next.expert_count", "blk.0.ssm_ba.weight", "[256, 8]", "blk.4.ffn_down_shexp.weight"}},
  };
  for (const auto& [arch, pieces] : cases) {
    SCOPED_TRACE(arch);
    const std::string gguf = dir + "/" + arch + ".gguf", hf = dir + "/" + arch + "-hf";
    const RunResult s = run_fulgur("synth --arch " + arch + " --mtp --type q8_0 --tokenizer builtin -o '" + gguf +
                                       "' --hf '" + hf + "'", dir);
    ASSERT_EQ(s.status, 0) << s.err;
    expect_pieces(s.err, {"tiny + MTP"});
    const std::string with = dir + "/" + arch + "-with.gguf", without = dir + "/" + arch + "-without.gguf";
    ASSERT_EQ(run_fulgur("convert '" + hf + "' -o '" + with + "' --type q8_0 --no-progress", dir).status, 0);
    ASSERT_EQ(run_fulgur("convert '" + hf + "' -o '" + without + "' --type q8_0 --no-progress --no-mtp", dir).status, 0);
    for (const std::string& file : {gguf, with}) {
      const RunResult i = run_fulgur("inspect '" + file + "'", dir);
      ASSERT_EQ(i.status, 0) << i.err;
      expect_pieces(i.out, pieces);
      expect_pieces(i.out, {arch + ".nextn_predict_layers", arch + ".block_count", "blk.4.nextn.eh_proj.weight",
                            "[512, 256]", "blk.4.nextn.shared_head_norm.weight", "blk.0.ssm_conv1d.weight", "[4, 256]",
                            "layout:      5 blocks: trunk 0-3 (Gated DeltaNet 0-2, attention 3), MTP 4"});
    }
    const RunResult i = run_fulgur("inspect '" + without + "'", dir);
    ASSERT_EQ(i.status, 0) << i.err;
    expect_pieces(i.out, {"layout:      4 blocks: trunk 0-3 (Gated DeltaNet 0-2, attention 3)"});
    EXPECT_EQ(i.out.find("nextn"), std::string::npos);
    const RunResult j = run_fulgur("inspect --json '" + with + "'", dir);
    ASSERT_EQ(j.status, 0) << j.err;
    const nlohmann::json layout = nlohmann::json::parse(j.out)["layout"];
    EXPECT_EQ(layout["mtp"], nlohmann::json::array({4}));
    EXPECT_EQ(layout["attention"], nlohmann::json::array({3}));
    EXPECT_EQ(layout["trunk"], 4);
  }
  fs::remove_all(dir);
}

TEST(ArchsCli, MtpFlagsAndBrokenMtpFiles) {
  const std::string dir = test::make_cli_temp_dir();
  ASSERT_EQ(run_fulgur("synth --arch qwen35 --mtp --tokenizer builtin -o '" + dir + "/q.gguf' --hf '" + dir + "/q-hf'",
                       dir).status, 0);
  ASSERT_EQ(run_fulgur("synth --arch qwen3 --tokenizer builtin -o '" + dir + "/d.gguf' --hf '" + dir + "/d-hf'",
                       dir).status, 0);
  const RunResult both = run_fulgur("convert '" + dir + "/q-hf' -o '" + dir + "/x.gguf' --mtp --no-mtp", dir);
  EXPECT_NE(both.status, 0);  // an argument error: CLI11's exit status
  EXPECT_NE(both.status, -1);
  expect_pieces(both.err, {"--mtp", "--no-mtp"});
  const RunResult dense = run_fulgur("convert '" + dir + "/d-hf' -o '" + dir + "/x.gguf' --mtp --no-progress", dir);
  EXPECT_EQ(dense.status, 1);
  expect_pieces(dense.err, {"fulgur: error:", "--mtp: Qwen3ForCausalLM has no MTP block fulgur can export",
                            "Qwen3_5ForConditionalGeneration"});
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
  // --no-mtp on such an arch is the same mistake, not silently accepted.
  const RunResult dense_no = run_fulgur("convert '" + dir + "/d-hf' -o '" + dir + "/x.gguf' --no-mtp --no-progress", dir);
  EXPECT_EQ(dense_no.status, 1);
  expect_pieces(dense_no.err, {"--no-mtp: Qwen3ForCausalLM has no MTP block fulgur can export or leave out"});
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
  const RunResult synth = run_fulgur("synth --arch qwen3 --mtp -o '" + dir + "/x.gguf'", dir);
  EXPECT_EQ(synth.status, 1);
  expect_pieces(synth.err, {"--mtp: qwen3 has no MTP block"});
  const RunResult shape = run_fulgur("synth --arch qwen35moe --shape qwen35-l8 -o '" + dir + "/x.gguf'", dir);
  EXPECT_EQ(shape.status, 1);
  expect_pieces(shape.err, {"qwen35moe has no shape 'qwen35-l8'"});
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));

  // A file whose nextn_predict_layers leaves no trunk: inspect still shows it, and says why it is
  // not a valid MTP layout.
  const GgufReader good(dir + "/q.gguf");
  GgufWriter w;
  w.copy_metadata(good);
  w.set_u32("qwen35.nextn_predict_layers", 5);
  w.add_tensor("token_embd.weight", DType::kF32, {4, 2}, std::vector<uint8_t>(32, 0));
  w.write(dir + "/broken.gguf");
  const RunResult i = run_fulgur("inspect '" + dir + "/broken.gguf'", dir);
  EXPECT_EQ(i.status, 0) << i.err;
  expect_pieces(i.out, {"layout:      invalid:", "nextn_predict_layers' is 5 but qwen35.block_count is 5"});
  fs::remove_all(dir);
}

// Nemotron-H's MTP head: synth --mtp writes it, convert keeps it (inspect shows the block after
// the trunk) or leaves it out; a Puzzle shape or checkpoint refuses --mtp by name.
TEST(ArchsCli, NemotronMtpFlags) {
  const std::string dir = test::make_cli_temp_dir();
  const RunResult s = run_fulgur("synth --arch nemotron_h_moe --mtp --tokenizer builtin -o '" + dir + "/n.gguf' --hf '" +
                                     dir + "/n-hf'",
                                 dir);
  ASSERT_EQ(s.status, 0) << s.err;
  expect_pieces(s.err, {"tiny + MTP"});
  ASSERT_EQ(run_fulgur("convert '" + dir + "/n-hf' -o '" + dir + "/c.gguf' --type f32 --no-progress", dir).status, 0);
  const RunResult i = run_fulgur("inspect '" + dir + "/c.gguf'", dir);
  EXPECT_EQ(i.status, 0) << i.err;
  expect_pieces(i.out, {"nemotron_h_moe.nextn_predict_layers", "blk.6.nextn.eh_proj.weight", "MTP 6"});
  ASSERT_EQ(run_fulgur("convert '" + dir + "/n-hf' -o '" + dir + "/x.gguf' --type f32 --no-mtp --no-progress", dir).status, 0);
  EXPECT_FALSE(GgufReader(dir + "/x.gguf").has("nemotron_h_moe.nextn_predict_layers"));
  const RunResult puzzle = run_fulgur("synth --arch nemotron_h_moe --shape tiny-puzzle --mtp -o '" + dir + "/p.gguf'", dir);
  EXPECT_EQ(puzzle.status, 1);
  expect_pieces(puzzle.err, {"--mtp", "tiny-puzzle", "Puzzle"});
  ASSERT_EQ(run_fulgur("synth --arch nemotron_h_moe --shape tiny-puzzle --tokenizer builtin -o '" + dir +
                           "/p.gguf' --hf '" + dir + "/p-hf'",
                       dir).status, 0);
  const RunResult conv = run_fulgur("convert '" + dir + "/p-hf' -o '" + dir + "/y.gguf' --mtp --no-progress", dir);
  EXPECT_EQ(conv.status, 1);
  expect_pieces(conv.err, {"--mtp", "NemotronHPuzzleForCausalLM"});
  EXPECT_FALSE(fs::exists(dir + "/y.gguf"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fulgur
