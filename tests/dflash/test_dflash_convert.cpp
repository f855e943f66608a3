// Conversion of block-drafter checkpoints in every source format into the `dflash` GGUF
// contract, and the errors for bad configs (no output file left behind).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convert/hf_config.h"
#include "dflash/dflash_fixture.h"
#include "gguf/gguf_reader.h"
#include "gguf/dflash_keys.h"

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
void expect_bad_config(const std::string& name, DraftSynthOptions o,
                       const std::function<void(nlohmann::json&)>& edit, const std::string& needle) {
  o.out_dir = env().dir + "/" + name;
  synth_draft_checkpoint(o);
  const fs::path cfg_path = fs::path(o.out_dir) / "config.json";
  nlohmann::json cfg = HfConfig::load(cfg_path.string()).json();
  edit(cfg);
  write_json_file(cfg_path.string(), cfg);
  ConvertOptions c;
  c.in_dir = o.out_dir;
  c.out_path = env().dir + "/" + name + ".gguf";
  c.progress = false;
  try {
    convert_hf_to_gguf(c);
    ADD_FAILURE() << name << ": conversion succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(c.out_path)) << name;
}

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

}  // namespace
}  // namespace fulgur::dflash_test
