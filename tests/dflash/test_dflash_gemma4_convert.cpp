// Gemma 4 block drafters (Gemma4DSparkModel: DeepSpec's flat config, a copy of the target's
// text_config, and the speculators-nested form with aux_hidden_state_layer_ids, the 1+N layout
// and a reduced vocabulary with I64 d2t) converted by `fulgur convert` into the `dflash` GGUF
// with llama.cpp's Gemma keys and tensors, loaded with Gemma 4 layers (the model description's
// general fields, as the gemma4 target uses them) and run losslessly on the tiny gemma4 target
// with drafts accepted; and the bad inputs, refused by name.
#include <cmath>
#include <cstring>

#include "dflash/dflash_fixture.h"
#include "gguf/dflash_keys.h"
#include "model/desc.h"

namespace fulgur::dflash_test {
namespace {

namespace g = dflash_gguf;

Env& gemma_env() {
  static Env* e = make_env("gemma4", 3);
  return *e;
}

struct Case {
  const char* name;
  const char* format;
  const char* markov;
  bool k_eq_v = true;
  bool reduced_vocab = false;
  bool anchor_first = true;  // speculators only; DeepSpec is always anchor-first
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

DraftSynthOptions gemma_options(const Case& c, const Env& e) {
  DraftSynthOptions o = draft_options(c.format, c.markov, e);
  o.backbone = "gemma4";
  o.k_eq_v = c.k_eq_v;
  o.n_layer = 2;
  o.n_target_layers = e.target->n_layer();
  o.target_layer_ids = {0, 3};
  o.sample_from_anchor = c.anchor_first;
  if (c.reduced_vocab) o.draft_vocab = e.n_vocab / 2;
  return o;
}

class Gemma4DraftConvert : public ::testing::TestWithParam<Case> {};

TEST_P(Gemma4DraftConvert, GemmaLayersLoadAndSpeculateLosslessly) {
  const Case c = GetParam();
  Env& e = gemma_env();
  const DraftSynthOptions o = gemma_options(c, e);
  const std::string path = make_draft(std::string("g4conv_") + c.name, o, e.target_path, e);
  {
    const GgufReader r(path);
    EXPECT_EQ(r.get_string("general.architecture"), "dflash");
    EXPECT_FLOAT_EQ(r.get_f32(g::kEmbdScale), std::sqrt(static_cast<float>(e.n_embd)));
    EXPECT_FLOAT_EQ(r.get_f32(g::kAttnScale), 1.0f);
    EXPECT_EQ(r.get_string(g::kHiddenAct), "gelu_pytorch_tanh");
    EXPECT_EQ(r.get_bool(g::kSampleFromAnchor), c.anchor_first);
    EXPECT_EQ(r.find_tensor("blk.0.attn_v.weight") != nullptr, !c.k_eq_v);
    for (const char* t : {"blk.1.post_attention_norm.weight", "blk.1.post_ffw_norm.weight", "blk.1.ffn_norm.weight",
                          "blk.1.layer_output_scale.weight"}) {
      EXPECT_NE(r.find_tensor(t), nullptr) << t;
    }
    // Proportional RoPE: a quarter of the 64-dim head rotates (8 of 32 pairs).
    const testing_support::F32Tensor freqs = testing_support::read_f32(r, g::kRopeFreqs);
    ASSERT_EQ(freqs.data.size(), 32u);
    EXPECT_EQ(freqs.data[7], 1.0f);
    EXPECT_GT(freqs.data[8], 1e29f);
    const GgufTensorInfo* d2t = r.find_tensor(g::kD2t);
    ASSERT_EQ(d2t != nullptr, c.reduced_vocab);
    if (d2t != nullptr) {
      EXPECT_EQ(d2t->type, DType::kI64);
      EXPECT_EQ(d2t->ne[0], e.n_vocab / 2);
      int64_t id = 0;
      std::memcpy(&id, d2t->data + 5 * 8, 8);
      EXPECT_EQ(id, 10);  // the synth keeps every other target id
    }
  }
  DflashDrafter d(path, *e.target, {.n_threads = 1});
  const ModelDesc& desc = d.model().desc();
  EXPECT_FLOAT_EQ(desc.embd_scale, std::sqrt(static_cast<float>(e.n_embd)));
  for (const LayerDesc& L : desc.layers) {
    EXPECT_TRUE(L.post_norms);
    EXPECT_TRUE(L.output_scale);
    EXPECT_EQ(L.ffn, FfnKind::kGeGlu);
    EXPECT_EQ(L.attn.kq_scale, 1.0f);
    EXPECT_EQ(L.attn.v_from_k, c.k_eq_v);
    EXPECT_EQ(L.attn.v_norm, c.k_eq_v);
    EXPECT_EQ(L.attn.n_head_kv, o.n_head_kv);
    EXPECT_EQ(L.attn.head_dim, o.head_dim);
  }
  EXPECT_EQ(d.max_draft(), c.anchor_first ? o.block_size : o.block_size - 1);
  SCOPED_TRACE(c.name);
  expect_lossless_with_accepted_drafts(d, *e.target, e.n_vocab);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, Gemma4DraftConvert,
    ::testing::Values(Case{"deepspec_dspark", "deepspec", "vanilla"},
                      Case{"speculators_dspark_d2t", "speculators", "vanilla", true, true, false},
                      Case{"speculators_dflash_v_proj", "speculators", "", false, false, false}),
    [](const auto& info) { return std::string(info.param.name); });

// speculators' own DFlash / DSpark layers are Qwen3 layers whatever the verifier
// (speculators/models/dflash/model_definitions.py), with the verifier's unscaled embeddings; built
// from a Gemma verifier's config they carry its hidden_act, gelu_pytorch_tanh: Qwen3 layers with
// a GEGLU feed-forward (dflash.hidden_activation), run losslessly on the gemma4 target.
TEST(Gemma4DraftConvert, SpeculatorsQwen3LayersWithGeluActivation) {
  Env& e = gemma_env();
  DraftSynthOptions o = draft_options("speculators", "vanilla", e);
  o.n_target_layers = e.target->n_layer();
  o.target_layer_ids = {0, 3};
  o.sample_from_anchor = false;
  o.out_dir = e.dir + "/g4conv_speculators_qwen3_gelu";
  synth_draft_checkpoint(o);
  const std::string cfg_path = o.out_dir + "/config.json";
  nlohmann::json cfg = HfConfig::load(cfg_path).json();
  cfg["transformer_layer_config"]["hidden_act"] = "gelu_pytorch_tanh";
  write_json_file(cfg_path, cfg);
  const std::string path = convert_draft_dir(o.out_dir, e.target_path);
  EXPECT_EQ(GgufReader(path).get_string(g::kHiddenAct), "gelu_pytorch_tanh");
  DflashDrafter d(path, *e.target, {.n_threads = 1});
  const ModelDesc& desc = d.model().desc();
  EXPECT_EQ(desc.embd_scale, 1.0f);
  for (const LayerDesc& L : desc.layers) {
    EXPECT_EQ(L.ffn, FfnKind::kGeGlu);
    EXPECT_FALSE(L.post_norms);
    EXPECT_FALSE(L.attn.v_from_k);
  }
  expect_lossless_with_accepted_drafts(d, *e.target, e.n_vocab);
}

TEST(Gemma4DraftConvert, BadInputIsRefusedByName) {
  Env& e = gemma_env();
  const DraftSynthOptions ds = gemma_options(Case{"bad", "deepspec", "vanilla"}, e);
  auto bad = [&](const std::string& name, const DraftSynthOptions& o, const std::function<void(nlohmann::json&)>& edit,
                 const std::string& needle, const std::function<void(const std::string&)>& tensors = {}) {
    SCOPED_TRACE(name);
    expect_bad_config("g4bad_" + name, o, edit, needle, e.target_path, e, tensors);
  };
  auto none = [](nlohmann::json&) {};
  // A backbone narrower than the target's hidden state.
  DraftSynthOptions narrow = ds;
  narrow.n_embd = e.n_embd / 2;
  narrow.embed.clear();
  narrow.lm_head.clear();
  bad("width", narrow, none, "hidden size");
  // Gemma layers without a tensor they need.
  bad("k_eq_v_off", ds,
      [](auto& c) {
        c["attention_k_eq_v"] = false;
        c["num_key_value_heads"] = c["num_global_key_value_heads"];
      },
      "layers.0.self_attn.v_proj.weight");
  bad("no_layer_scalar", ds, none, "layers.1.layer_scalar",
      [](const std::string& dir) { rewrite_tensor(dir, "layers.1.layer_scalar", ""); });
  bad("no_post_ffw", ds, none, "post_feedforward_layernorm",
      [](const std::string& dir) { rewrite_tensor(dir, "layers.0.post_feedforward_layernorm.weight", ""); });
  // What fulgur's (and llama.cpp's) Gemma draft layers are not.
  bad("activation", ds, [](auto& c) { c["hidden_activation"] = "silu"; }, "gelu_pytorch_tanh");
  bad("softcap", ds, [](auto& c) { c["final_logit_softcapping"] = 30.0; }, "final_logit_softcapping");
  bad("sliding", ds, [](auto& c) { c["layer_types"][1] = "sliding_attention"; }, "layer_types[1]");
  bad("rope", ds, [](auto& c) { c["rope_parameters"]["full_attention"]["rope_type"] = "yarn"; }, "rope_type");
  bad("qwen_type", ds, [](auto& c) { c["model_type"] = "qwen3"; }, "gemma4_text");
  // A reduced vocabulary whose d2t has the wrong length.
  const DraftSynthOptions sp = gemma_options(Case{"bad", "speculators", "vanilla", true, true, false}, e);
  const int64_t Vd = e.n_vocab / 2;
  bad("d2t_length", sp, none, "d2t", [Vd](const std::string& dir) {
    std::vector<int64_t> offsets(static_cast<size_t>(Vd - 1), 0);
    std::vector<uint8_t> bytes(offsets.size() * 8);
    std::memcpy(bytes.data(), offsets.data(), bytes.size());
    rewrite_tensor(dir, "d2t", "d2t", TensorBytes{SafetensorsDType::kI64, {Vd - 1}, bytes});
  });
  bad("draft_vocab", sp, [](auto& c) { c["draft_vocab_size"] = 1 << 20; }, "draft_vocab_size");
}

}  // namespace
}  // namespace fulgur::dflash_test
