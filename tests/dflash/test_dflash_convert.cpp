// Conversion of block-drafter checkpoints in every source format into the `dflash` GGUF
// contract, and the errors for bad configs (no output file left behind).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convert/hf_config.h"
#include "convert/nvfp4_test_util.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "dflash/dflash_fixture.h"
#include "gguf/gguf_reader.h"
#include "gguf/dflash_keys.h"
#include "zoo_path.h"

namespace fulgur::dflash_test {
namespace {

namespace fs = std::filesystem;
namespace g = dflash_gguf;

TEST(DflashConvert, DeepSpecKeysAndTensors) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  const std::string path = make_draft("conv_deepspec", o);
  GgufReader r(path);
  EXPECT_EQ(r.get_string("general.architecture"), "dflash");
  EXPECT_EQ(r.get_int_array<int32_t>(g::kTargetLayers), (std::vector<int32_t>{1, 2}));  // ids + 1
  EXPECT_EQ(r.get_u32(g::kBlockSize), 4u);
  EXPECT_EQ(r.get_u32(g::kMaskToken), static_cast<uint32_t>(env().n_vocab - 1));
  EXPECT_TRUE(r.get_bool(g::kSampleFromAnchor));
  EXPECT_EQ(r.get_string(g::kMarkovHeadType), "vanilla");
  for (const char* t : {g::kFc, g::kEncNorm, g::kOutputNorm, g::kTokenEmbd, g::kOutput,
                        g::kMarkovW1, g::kMarkovW2, g::kConfProj, g::kConfBias,
                        "blk.0.attn_q_norm.weight", "blk.0.ffn_down.weight"}) {
    EXPECT_NE(r.find_tensor(t), nullptr) << t;
  }
  EXPECT_EQ(r.tensor(g::kMarkovW1).shape(), (std::vector<int64_t>{16, env().n_vocab}));
  EXPECT_EQ(r.tensor(g::kConfProj).shape(), (std::vector<int64_t>{env().n_embd + 16, 1}));
}

TEST(DflashConvert, ZlabIsOnePlusNWithoutEmbeddings) {
  const std::string path = make_draft("conv_zlab", draft_options("zlab", ""));
  GgufReader r(path);
  EXPECT_FALSE(r.get_bool(g::kSampleFromAnchor));
  EXPECT_EQ(r.find_tensor(g::kTokenEmbd), nullptr);
  EXPECT_EQ(r.find_tensor(g::kOutput), nullptr);
  EXPECT_EQ(r.find_tensor(g::kMarkovW1), nullptr);
  EXPECT_EQ(r.get_int_array<int32_t>(g::kTargetLayers), (std::vector<int32_t>{1, 2}));
}

TEST(DflashConvert, SpeculatorsReducedVocabularyBecomesAbsoluteD2t) {
  DraftSynthOptions o = draft_options("speculators", "vanilla");
  o.draft_vocab = env().n_vocab / 2;
  const std::string path = make_draft("conv_spec_d2t", o);
  GgufReader r(path);
  const GgufTensorInfo& d2t = r.tensor(g::kD2t);
  ASSERT_EQ(d2t.type, DType::kI64);
  ASSERT_EQ(d2t.ne[0], o.draft_vocab);
  for (int64_t i = 0; i < o.draft_vocab; ++i) {
    int64_t id = 0;
    std::memcpy(&id, d2t.data + i * 8, 8);
    ASSERT_EQ(id, 2 * i);  // synth keeps every other id; offsets i -> absolute 2i
  }
  EXPECT_EQ(r.tensor(g::kOutput).ne[1], o.draft_vocab);
  EXPECT_EQ(r.tensor(g::kMarkovW2).ne[1], o.draft_vocab);
  EXPECT_EQ(r.tensor(g::kMarkovW1).ne[1], env().n_vocab);
  // aux_hidden_state_layer_ids are already layer-input indices: not shifted again.
  EXPECT_EQ(r.get_int_array<int32_t>(g::kTargetLayers), (std::vector<int32_t>{1, 2}));
}

TEST(DflashConvert, GatedRnnAndSpecForgeAndDflash2) {
  GgufReader gated(make_draft("conv_gated", draft_options("deepspec", "gated")));
  EXPECT_EQ(gated.get_string(g::kMarkovHeadType), "gated");
  EXPECT_NE(gated.find_tensor(g::kMarkovGate), nullptr);
  GgufReader rnn(make_draft("conv_rnn", draft_options("deepspec", "rnn")));
  EXPECT_NE(rnn.find_tensor(g::kMarkovJoint), nullptr);
  DraftSynthOptions sf = draft_options("specforge", "vanilla");
  sf.logit_head_prefix = true;
  GgufReader specforge(make_draft("conv_specforge", sf));
  EXPECT_FALSE(specforge.get_bool(g::kSampleFromAnchor));
  EXPECT_NE(specforge.find_tensor(g::kMarkovW1), nullptr);
  GgufReader d2(make_draft("conv_dflash2", draft_options("dflash2", "")));
  EXPECT_EQ(d2.get_u32(g::kSelectorTopK), 4u);
  EXPECT_NE(d2.find_tensor("blk.0.attn_conv_base"), nullptr);
  EXPECT_NE(d2.find_tensor(g::kSelHidden), nullptr);
}

// Edits config.json of a fresh checkpoint, converts, expects an error containing `needle` and
// no output file.
TEST(DflashConvert, BadConfigsAreRefused) {
  const DraftSynthOptions ds = draft_options("deepspec", "vanilla");
  expect_bad_config("bad_missing_block", ds, [](auto& c) { c.erase("block_size"); }, "block_size");
  expect_bad_config("bad_markov_type", ds, [](auto& c) { c["markov_head_type"] = "lstm"; },
                    "markov_head_type");
  expect_bad_config("bad_mask", ds, [](auto& c) { c["mask_token_id"] = 1 << 20; }, "mask_token_id");
  expect_bad_config("bad_ids", ds, [](auto& c) { c["target_layer_ids"] = {1, 0}; },
                    "strictly increasing");
  expect_bad_config("bad_ids_range", ds, [](auto& c) { c["target_layer_ids"] = {0, 5}; },
                    "beyond");
  expect_bad_config("bad_rank", ds, [](auto& c) { c["markov_rank"] = 8; }, "markov_w1");
  expect_bad_config("bad_swa", ds, [](auto& c) { c["layer_types"] = {"sliding_attention"}; },
                    "layer_types");
  expect_bad_config("bad_block_zero", ds, [](auto& c) { c["block_size"] = 0; }, "block_size");
  const DraftSynthOptions zl = draft_options("zlab", "");
  expect_bad_config("bad_block_clash", zl, [](auto& c) { c["dflash_config"]["block_size"] = 8; },
                    "contradictory");
  expect_bad_config("bad_no_dflash_config", zl, [](auto& c) { c.erase("dflash_config"); },
                    "dflash_config");
  DraftSynthOptions sp = draft_options("speculators", "vanilla");
  expect_bad_config("bad_spec_type", sp, [](auto& c) { c["speculators_model_type"] = "dflash"; },
                    "contradictory");
  expect_bad_config("bad_spec_tokens", sp,
                    [](auto& c) { c["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 9; },
                    "speculative_tokens");
  expect_bad_config("bad_unknown_arch", ds,
                    [](auto& c) { c["architectures"] = {"Gemma4DSparkModel"}; }, "Gemma4DSparkModel");
}

TEST(DflashConvert, UnexpectedTensorIsRefused) {
  // A DeepSpec DFlash config (rank 0) over a checkpoint that holds Markov tensors.
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  o.confidence = false;
  expect_bad_config("bad_extra_tensor", o,
                    [](auto& c) {
                      c["markov_rank"] = 0;
                      c.erase("markov_head_type");
                    },
                    "unexpected tensor");
}

// Writes a checkpoint of `o` under `name`, edits its config.json, converts it with `target`.
std::string convert_edited(const std::string& name, DraftSynthOptions o,
                           const std::function<void(nlohmann::json&)>& edit,
                           const std::string& target = "") {
  o.out_dir = env().dir + "/" + name;
  synth_draft_checkpoint(o);
  const std::string cfg_path = o.out_dir + "/config.json";
  nlohmann::json cfg = HfConfig::load(cfg_path).json();
  edit(cfg);
  write_json_file(cfg_path, cfg);
  return convert_draft_dir(o.out_dir, target);
}

// RedHatAI's speculators DSpark exports name the class DSparkDraftModel (as SpecForge does) but
// nest the backbone under transformer_layer_config; they must not go down the SpecForge path.
TEST(DflashConvert, SpeculatorsDsparkDraftModelForm) {
  DraftSynthOptions o = draft_options("speculators", "vanilla");
  o.sample_from_anchor = false;
  const std::string path = convert_edited("conv_spec_dsdm", o, [](nlohmann::json& c) {
    c["architectures"] = {"DSparkDraftModel"};
  });
  GgufReader r(path);
  EXPECT_FALSE(r.get_bool(g::kSampleFromAnchor));
  EXPECT_EQ(r.get_string(g::kMarkovHeadType), "vanilla");
  EXPECT_EQ(r.get_int_array<int32_t>(g::kTargetLayers), (std::vector<int32_t>{1, 2}));
  // The same with the class name contradicting speculators_model_type is refused.
  expect_bad_config("bad_spec_dfdm", o, [](auto& c) { c["architectures"] = {"DFlashDraftModel"}; },
                    "contradictory");
}

// Without sample_from_anchor, the layout comes from speculative_tokens (B drafts =
// anchor-first, B - 1 = 1+N), and without that from the export format (1+N).
TEST(DflashConvert, SpeculatorsLayoutDefaults) {
  DraftSynthOptions o = draft_options("speculators", "vanilla");
  auto layout = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    GgufReader r(convert_edited(name, o, [&](nlohmann::json& c) {
      c.erase("sample_from_anchor");
      edit(c);
    }));
    return r.get_bool(g::kSampleFromAnchor);
  };
  auto tokens = [](int64_t n) {
    return [n](nlohmann::json& c) {
      c["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = n;
    };
  };
  EXPECT_TRUE(layout("conv_spec_layout_b", tokens(o.block_size)));
  EXPECT_FALSE(layout("conv_spec_layout_b1", tokens(o.block_size - 1)));
  EXPECT_FALSE(layout("conv_spec_layout_none", [](nlohmann::json& c) { c.erase("speculators_config"); }));
}

// A SpecForge config that says sample_from_anchor (at the top or in dflash_config) is honoured;
// without it the export reads 1+N.
TEST(DflashConvert, SpecForgeSampleFromAnchorIsHonoured) {
  DraftSynthOptions o = draft_options("specforge", "vanilla");
  const auto anchor_first = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    return GgufReader(convert_edited(name, o, edit)).get_bool(g::kSampleFromAnchor);
  };
  EXPECT_TRUE(anchor_first("conv_sf_top", [](nlohmann::json& c) { c["sample_from_anchor"] = true; }));
  EXPECT_TRUE(anchor_first("conv_sf_nested", [](nlohmann::json& c) { c["dflash_config"]["sample_from_anchor"] = true; }));
  EXPECT_FALSE(anchor_first("conv_sf_false", [](nlohmann::json& c) { c["dflash_config"]["sample_from_anchor"] = false; }));
}

// DFlash2's output_multiplier and final_logit_softcapping become the keys its loader applies.
TEST(DflashConvert, Dflash2LogitScaleAndSoftcapAreConverted) {
  DraftSynthOptions o = draft_options("dflash2", "");
  GgufReader r(convert_edited("conv_d2_cap", o, [](nlohmann::json& c) {
    c["dflash_config"]["output_multiplier"] = 0.5;
    c["dflash_config"]["final_logit_softcapping"] = 30.0;
  }));
  EXPECT_FLOAT_EQ(r.get_f32(g::kLogitScale), 0.5f);
  EXPECT_FLOAT_EQ(r.get_f32(g::kSoftcap), 30.0f);
  GgufReader plain(make_draft("conv_d2_plain", o));
  EXPECT_FALSE(plain.has(g::kLogitScale));
  EXPECT_FALSE(plain.has(g::kSoftcap));
  expect_bad_config("bad_d2_scale", o, [](auto& c) { c["dflash_config"]["output_multiplier"] = -1.0; },
                    "output_multiplier");
}

TEST(DflashConvert, NestedLmHeadName) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  const std::string plain = make_draft("conv_lm_plain", o);
  o.out_dir = env().dir + "/conv_lm_nested";
  synth_draft_checkpoint(o);
  rename_tensor(o.out_dir, "lm_head.weight", "model.lm_head.weight");
  GgufReader a(plain), b(convert_draft_dir(o.out_dir));
  const GgufTensorInfo &ta = a.tensor(g::kOutput), &tb = b.tensor(g::kOutput);
  ASSERT_EQ(ta.nbytes, tb.nbytes);
  EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.nbytes), 0);
}

// --target puts the target's vocabulary into the draft (the draft's mask token kept), from a
// GGUF target or an HF folder; a draft that does not fit the target is refused by name.
TEST(DflashConvert, TargetVocabulary) {
  const std::string path =
      make_draft("conv_target_gguf", draft_options("deepspec", "vanilla"), env().target_path);
  GgufReader r(path), t(env().target_path);
  EXPECT_EQ(r.get_string_array("tokenizer.ggml.tokens"), t.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(r.get_string_array("tokenizer.ggml.merges"), t.get_string_array("tokenizer.ggml.merges"));
  EXPECT_EQ(r.get_string("tokenizer.ggml.pre"), t.get_string("tokenizer.ggml.pre"));
  EXPECT_EQ(r.get_u32(g::kMaskToken), static_cast<uint32_t>(env().n_vocab - 1));
  int mask_keys = 0;
  for (const GgufKv& kv : r.metadata()) mask_keys += kv.key == g::kMaskToken;
  EXPECT_EQ(mask_keys, 1);

  // An HF folder: the target's checkpoint as `fulgur synth --hf` writes it.
  SynthOptions so;
  so.arch = "qwen3";
  so.shape = "tiny";
  so.seed = 7;
  so.out = env().dir + "/target_again.gguf";
  so.hf_dir = env().dir + "/target_hf";
  so.tokenizer_json = "builtin";
  synth_model(so);
  GgufReader h(make_draft("conv_target_hf", draft_options("zlab", ""), so.hf_dir));
  EXPECT_EQ(h.get_string_array("tokenizer.ggml.tokens"), t.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(h.get_u32(g::kMaskToken), static_cast<uint32_t>(env().n_vocab - 1));

  DraftSynthOptions wide = draft_options("zlab", "");
  wide.n_embd = env().n_embd * 2;
  wide.embed.clear();
  wide.lm_head.clear();
  try {
    make_draft("conv_target_wide", wide, env().target_path);
    ADD_FAILURE() << "a draft wider than its target was converted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden size"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(env().dir + "/conv_target_wide.gguf"));
  try {
    make_draft("conv_target_self", draft_options("zlab", ""), path);
    ADD_FAILURE() << "a draft was accepted as --target";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a target"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fulgur::dflash_test

namespace fulgur::dflash_test {
namespace {

// Seed corpus for fuzz/fuzz_hf_config.cpp (skipped unless asked for): the config.json of every
// draft format, of the dense targets, of an NVFP4 checkpoint, and of the zoo when present.
//   FULGUR_WRITE_FUZZ_CORPUS=fuzz/corpus-config build/test_dflash --gtest_filter=ConfigFuzzCorpus.*
TEST(ConfigFuzzCorpus, Write) {
  const char* dir = std::getenv("FULGUR_WRITE_FUZZ_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "set FULGUR_WRITE_FUZZ_CORPUS=DIR to write the seed corpus";
  fs::create_directories(dir);
  auto keep = [&](const std::string& from, const std::string& name) {
    fs::copy_file(from + "/config.json", std::string(dir) + "/" + name + ".json",
                  fs::copy_options::overwrite_existing);
  };
  for (const auto& [format, markov] : std::vector<std::pair<std::string, std::string>>{
           {"deepspec", "vanilla"}, {"deepspec", "gated"}, {"deepspec", "rnn"}, {"deepspec", ""},
           {"zlab", ""}, {"dflash2", ""}, {"speculators", "vanilla"}, {"speculators", ""},
           {"specforge", "vanilla"}}) {
    DraftSynthOptions o = draft_options(format, markov);
    o.out_dir = env().dir + "/corpus_" + format + "_" + markov;
    synth_draft_checkpoint(o);
    keep(o.out_dir, "draft_" + format + "_" + (markov.empty() ? "plain" : markov));
  }
  for (const char* arch : {"qwen3", "qwen2", "llama"}) {
    SynthOptions so;
    so.arch = arch;
    so.out = env().dir + "/corpus_" + arch + ".gguf";
    so.hf_dir = env().dir + "/corpus_" + arch;
    so.tokenizer_json = "builtin";
    synth_model(so);
    keep(so.hf_dir, std::string("target_") + arch);
    if (std::string(arch) == "qwen3") {
      nlohmann::json c = HfConfig::load(so.hf_dir).json();
      c["quantization_config"] = test::nvfp4_quantization_config({"lm_head"});
      write_json_file(std::string(dir) + "/target_qwen3_nvfp4.json", c);
    }
  }
  const std::string zoo = test::zoo_dir();
  for (const char* m : {"zoo-qwen3-code", "zoo-dspark", "zoo-qwen3-code-draft"}) {
    if (fs::exists(zoo + "/" + m + "/config.json")) keep(zoo + "/" + m, m);
  }
}

}  // namespace
}  // namespace fulgur::dflash_test
