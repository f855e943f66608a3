// Every block-draft kind fulgur's converter writes loads in llama.cpp (its prebuilt CPU build
// from npm node-llama-cpp 3.22.1) when converted with --target, which puts the target's
// vocabulary into the draft; without it llama.cpp stops at the missing tokenizer. The kinds
// llama.cpp cannot hold (gated / rnn Markov heads) are refused there, as the converter warns.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <string>

#include "convert/draft_config.h"
#include "convert/hf_config.h"
#include "convert/nvfp4_test_util.h"
#include "dflash/dflash_fixture.h"
#include "llama/llama_oracle.h"

namespace fulgur::test {
namespace {

using dflash_test::draft_options;
using dflash_test::env;
using dflash_test::make_draft;

struct LoadResult {
  bool ok = false;
  std::string error;  // the message and llama.cpp's log lines
};

LoadResult llama_load(const std::string& model) {
  const std::string dir = scratch_dir("fulgur_llama_load");
  const Proc p = run_shell("node '" + std::string(FULGUR_SOURCE_DIR) +
                               "/tests/oracle/llama_load.mjs' --model '" + model + "'",
                           dir);
  LoadResult r;
  EXPECT_EQ(p.status, 0) << p.err;
  if (p.status != 0) return r;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  r.ok = j.at("ok").get<bool>();
  if (!r.ok) r.error = j.dump();
  return r;
}

class LlamaDrafts : public testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = llama_oracle_missing(); !why.empty()) GTEST_SKIP() << why;
  }
  // Converts with the target's vocabulary and expects llama.cpp to load the result.
  void expect_loads(const std::string& name, const DraftSynthOptions& o) {
    const std::string path = make_draft(name, o, env().target_path);
    const LoadResult r = llama_load(path);
    EXPECT_TRUE(r.ok) << name << ": " << r.error;
  }
};

TEST_F(LlamaDrafts, WithoutTargetVocabularyLlamaCppRefuses) {
  const LoadResult r = llama_load(make_draft("llama_novocab", draft_options("deepspec", "vanilla")));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("tokenizer.ggml.model"), std::string::npos) << r.error;
}

TEST_F(LlamaDrafts, DflashLoads) { expect_loads("llama_zlab", draft_options("zlab", "")); }

TEST_F(LlamaDrafts, Dflash2Loads) { expect_loads("llama_dflash2", draft_options("dflash2", "")); }

TEST_F(LlamaDrafts, DsparkVanillaLoads) {
  expect_loads("llama_dspark", draft_options("deepspec", "vanilla"));
}

TEST_F(LlamaDrafts, DsparkReducedVocabularyLoads) {
  DraftSynthOptions o = draft_options("speculators", "vanilla");
  o.draft_vocab = env().n_vocab / 2;
  o.sample_from_anchor = false;
  expect_loads("llama_dspark_d2t", o);
}

TEST_F(LlamaDrafts, SpecForgeDsparkLoads) {
  expect_loads("llama_specforge", draft_options("specforge", "vanilla"));
}

TEST_F(LlamaDrafts, DsparkWithoutConfidenceHeadLoads) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  o.confidence = false;
  expect_loads("llama_dspark_noconf", o);
}

// Gemma 4 drafts (Gemma4DSparkModel, DeepSpec's flat form and the speculators form with a
// reduced vocabulary) for the tiny gemma4 target: llama.cpp's `dflash` loader takes their Gemma
// keys and tensors (embedding_scale, attention.scale, hidden_activation, no attn_v, sandwich
// norms, layer_output_scale, rope_freqs).
TEST_F(LlamaDrafts, Gemma4DsparkLoads) {
  static dflash_test::Env* g = dflash_test::make_env("gemma4", 3);
  for (const char* format : {"deepspec", "speculators"}) {
    DraftSynthOptions o = draft_options(format, "vanilla", *g);
    o.backbone = "gemma4";
    o.n_layer = 2;
    o.n_target_layers = g->target->n_layer();
    o.target_layer_ids = {0, 3};
    if (std::string(format) == "speculators") {
      o.draft_vocab = g->n_vocab / 2;
      o.sample_from_anchor = false;
    }
    const LoadResult r = llama_load(make_draft(std::string("llama_gemma4_") + format, o, g->target_path, *g));
    EXPECT_TRUE(r.ok) << format << ": " << r.error;
  }
}

// EAGLE-3 drafts (llama.cpp's arch eagle3), both checkpoint forms, full and reduced vocabulary.
TEST_F(LlamaDrafts, Eagle3Loads) {
  for (const char* format : {"speculators", "specforge"}) {
    for (int64_t draft_vocab : {int64_t{0}, env().n_vocab / 2}) {
      DraftSynthOptions o;
      o.format = format;
      o.n_embd = env().n_embd;
      o.n_head = 4;
      o.n_head_kv = 2;
      o.head_dim = 32;
      o.n_ff = 128;
      o.n_vocab = env().n_vocab;
      o.draft_vocab = draft_vocab;
      o.target_layer_ids = {0, 1, env().target->n_layer() - 1};
      o.out_dir = env().dir + "/llama_eagle3_" + format + std::to_string(draft_vocab);
      synth_eagle3_checkpoint(o);
      const LoadResult r = llama_load(dflash_test::convert_draft_dir(o.out_dir, env().target_path));
      EXPECT_TRUE(r.ok) << format << ", draft vocabulary " << draft_vocab << ": " << r.error;
    }
  }
}

// A Gemma 4 assistant `fulgur synth` writes for a gemma4 target (llama.cpp's arch
// gemma4-assistant), random and echo, f32 and q8_0 matrices.
TEST_F(LlamaDrafts, Gemma4AssistantLoads) {
  const std::string dir = env().dir;
  const std::string target = synth_gemma4("tiny", "f32", dir);
  for (const char* extra : {"--type f32", "--type q8_0", "--echo"}) {
    const std::string out = dir + "/llama_gemma4_assistant_" + std::to_string(std::hash<std::string>{}(extra)) + ".gguf";
    run_fulgur_ok(std::string("synth --arch gemma4-assistant --seed 2 --target '") + target + "' -o '" + out + "' " + extra,
                  dir);
    const LoadResult r = llama_load(out);
    EXPECT_TRUE(r.ok) << extra << ": " << r.error;
  }
}

// The same assistant through its Hugging Face checkpoint: `synth --hf`, then `fulgur convert
// --target` (Gemma4AssistantForCausalLM, as llama.cpp's Gemma4AssistantModel writes it).
TEST_F(LlamaDrafts, ConvertedGemma4AssistantLoads) {
  const std::string dir = env().dir;
  const std::string target = synth_gemma4("tiny", "f32", dir);
  const std::string hf = dir + "/llama_gemma4_assistant_hf";
  run_fulgur_ok("synth --arch gemma4-assistant --seed 4 --target '" + target + "' -o '" + hf + ".synth.gguf' --hf '" +
                    hf + "'",
                dir);
  run_fulgur_ok("convert '" + hf + "' -o '" + hf + ".gguf' --type q8_0 --target '" + target + "'", dir);
  const LoadResult r = llama_load(hf + ".gguf");
  EXPECT_TRUE(r.ok) << r.error;
}

// An NVFP4 draft (compressed-tensors checkpoint): NVFP4 tensors with `.scale` sidecars.
TEST_F(LlamaDrafts, DsparkNvfp4Loads) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  o.out_dir = env().dir + "/llama_nvfp4";
  synth_draft_checkpoint(o);
  test::quantize_checkpoint(o.out_dir, {"fc.weight", "layers.0.self_attn.q_proj.weight",
                                        "layers.0.mlp.down_proj.weight"},
                            false);
  nlohmann::json cfg = HfConfig::load(o.out_dir).json();
  cfg["quantization_config"] = test::nvfp4_quantization_config({"lm_head"});
  write_json_file(o.out_dir + "/config.json", cfg);
  const LoadResult r = llama_load(dflash_test::convert_draft_dir(o.out_dir, env().target_path));
  EXPECT_TRUE(r.ok) << r.error;
}

// The converter warns that these load in fulgur only; llama.cpp indeed refuses them.
TEST_F(LlamaDrafts, GatedMarkovHeadIsRefusedAsWarned) {
  const DraftSynthOptions o = draft_options("deepspec", "gated");
  const LoadResult r = llama_load(make_draft("llama_gated", o, env().target_path));
  EXPECT_FALSE(r.ok);
}

TEST_F(LlamaDrafts, ConfidenceHeadWithoutMarkovInputIsRefusedAsWarned) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  o.conf_with_markov = false;
  EXPECT_FALSE(llama_load(make_draft("llama_conf_h_only", o, env().target_path)).ok);
}

// Each refusal above is one the converter announces.
TEST(LlamaDraftWarnings, NameWhatLlamaCppReadsDifferently) {
  auto warnings = [](const std::string& name, const DraftSynthOptions& opts) {
    DraftSynthOptions o = opts;
    o.out_dir = env().dir + "/" + name;
    synth_draft_checkpoint(o);
    const HfConfig cfg = HfConfig::load(o.out_dir);
    std::string all;
    for (const std::string& w : llamacpp_differences(parse_draft_config(cfg, {}))) all += w + "\n";
    return all;
  };
  EXPECT_EQ(warnings("warn_dspark", draft_options("deepspec", "vanilla")), "");
  EXPECT_EQ(warnings("warn_zlab", draft_options("zlab", "")), "");
  EXPECT_NE(warnings("warn_gated", draft_options("deepspec", "gated")).find("gated Markov head"),
            std::string::npos);
  DraftSynthOptions conf = draft_options("deepspec", "vanilla");
  conf.conf_with_markov = false;
  EXPECT_NE(warnings("warn_conf", conf).find("confidence head reads the hidden state only"),
            std::string::npos);
  // A DeepSpec-format retrained DFlash (rank 0) is anchor-first: llama.cpp reads it as 1+N.
  EXPECT_NE(warnings("warn_plain_af", draft_options("deepspec", "")).find("one slot late"),
            std::string::npos);
}

}  // namespace
}  // namespace fulgur::test
