#include "synth/synth_configs.h"

#include <vector>

#include "core/error.h"

namespace fulgur {
namespace {

using Json = nlohmann::json;

struct Shape {
  const char* name;
  Json fields;  // config.json fields particular to this shape
};

// Qwen3's published dense shapes (qwen3, qwen2 and llama share them).
std::vector<Shape> dense_shapes() {
  auto dense = [](int64_t E, int64_t L, int64_t H, int64_t Hkv, int64_t Dh, int64_t F, int64_t ctx) {
    return Json{{"hidden_size", E}, {"num_hidden_layers", L}, {"num_attention_heads", H},
                {"num_key_value_heads", Hkv}, {"head_dim", Dh}, {"intermediate_size", F},
                {"max_position_embeddings", ctx}, {"tie_word_embeddings", true}};
  };
  return {{"tiny", dense(256, 2, 4, 2, 64, 512, 1024)},
          {"0.6b", dense(1024, 28, 16, 8, 128, 3072, 40960)},
          {"1.7b", dense(2048, 28, 16, 8, 128, 6144, 40960)},
          {"4b", dense(2560, 36, 32, 8, 128, 9728, 40960)}};
}

// No per-layer qwen3moe shape (experts used / expert width varying by layer): llama.cpp's
// qwen3moe (src/models/qwen3moe.cpp of the npm build) sizes every layer's expert tensors with
// layer 0's expert_feed_forward_length and routes every layer with layer 0's
// expert_used_count, so such a file would either not load or not mean the same there. Per-layer
// expert arrays are exercised by the nemotron_h_moe tiny-puzzle shape, which llama.cpp runs
// per layer.
std::vector<Shape> qwen3moe_shapes() {
  // 30b-a3b-l6: Qwen3-30B-A3B's layer (config.json of Qwen/Qwen3-30B-A3B, archs-gguf.md §6.2:
  // hidden 2048, 32/4 heads of 128, intermediate 6144, 128 experts of 768, 8 used, untied) with
  // 6 of its 48 layers, so the Q8_0 file (~3.3 GB) fits a small machine.
  auto moe = [](int64_t E, int64_t L, int64_t H, int64_t Hkv, int64_t Dh, int64_t F, int64_t n_exp,
                int64_t used, int64_t F_exp, int64_t ctx, bool tied) {
    return Json{{"hidden_size", E}, {"num_hidden_layers", L}, {"num_attention_heads", H},
                {"num_key_value_heads", Hkv}, {"head_dim", Dh}, {"intermediate_size", F},
                {"num_experts", n_exp}, {"num_experts_per_tok", used}, {"moe_intermediate_size", F_exp},
                {"norm_topk_prob", true}, {"decoder_sparse_step", 1}, {"mlp_only_layers", Json::array()},
                {"max_position_embeddings", ctx}, {"tie_word_embeddings", tied}};
  };
  return {{"tiny", moe(256, 2, 4, 2, 64, 512, 16, 4, 128, 1024, true)},
          {"30b-a3b-l6", moe(2048, 6, 32, 4, 128, 6144, 128, 8, 768, 40960, false)}};
}

// gpt-oss (GptOssForCausalLM, transformers' configuration_gpt_oss.py; the fields of
// openai/gpt-oss-20b's config.json): attention layers alternating sliding ("sliding_attention")
// and full, YaRN RoPE, a MoE of biased experts on every layer, untied head. tiny keeps every
// feature at widths where each expert row fills MXFP4 blocks of 32, with a window of 16 (as
// gemma4's tiny shapes) so short prompts already slide past it; 20b is gpt-oss-20b's shape.
std::vector<Shape> gpt_oss_shapes() {
  auto oss = [](int64_t E, int64_t L, int64_t H, int64_t Hkv, int64_t Dh, int64_t F, int64_t n_exp,
                int64_t used, int64_t window, int64_t ctx) {
    Json types = Json::array();
    for (int64_t l = 0; l < L; ++l) types.push_back(l % 2 == 0 ? "sliding_attention" : "full_attention");
    return Json{{"hidden_size", E}, {"num_hidden_layers", L}, {"num_attention_heads", H},
                {"num_key_value_heads", Hkv}, {"head_dim", Dh}, {"intermediate_size", F},
                {"num_local_experts", n_exp}, {"num_experts_per_tok", used}, {"experts_per_token", used},
                {"sliding_window", window}, {"layer_types", types}, {"attention_bias", true},
                {"swiglu_limit", 7.0}, {"rms_norm_eps", 1e-5}, {"rope_theta", 150000.0},
                {"rope_scaling", Json{{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0},
                                      {"beta_slow", 1.0}, {"original_max_position_embeddings", 4096}}},
                {"initial_context_length", 4096}, {"max_position_embeddings", ctx},
                {"tie_word_embeddings", false}};
  };
  return {{"tiny", oss(128, 4, 4, 2, 32, 128, 8, 4, 16, 131072)},
          {"20b", oss(2880, 24, 64, 8, 64, 2880, 32, 4, 128, 131072)}};
}

// Fields shared by the Nemotron-H shapes: attention, Mamba2 and (MoE) routing.
Json nemotron_fields(int64_t E, int64_t H, int64_t Hkv, int64_t Dh, int64_t mamba_heads,
                     int64_t mamba_head_dim, int64_t groups, int64_t state, int64_t ctx) {
  return Json{{"hidden_size", E}, {"num_attention_heads", H}, {"num_key_value_heads", Hkv},
              {"head_dim", Dh}, {"mamba_num_heads", mamba_heads}, {"mamba_head_dim", mamba_head_dim},
              {"n_groups", groups}, {"ssm_state_size", state}, {"conv_kernel", 4},
              {"use_conv_bias", true}, {"mamba_hidden_act", "silu"}, {"mlp_hidden_act", "relu2"},
              {"layer_norm_epsilon", 1e-5}, {"max_position_embeddings", ctx},
              {"tie_word_embeddings", false}, {"attention_bias", false}, {"mlp_bias", false},
              {"use_bias", false}};
}

Json routing(int64_t n_exp, int64_t used, int64_t F_exp, int64_t F_shared) {
  return Json{{"n_routed_experts", n_exp}, {"num_experts_per_tok", used},
              {"moe_intermediate_size", F_exp}, {"moe_shared_expert_intermediate_size", F_shared},
              {"n_shared_experts", 1}, {"norm_topk_prob", true}, {"routed_scaling_factor", 2.5},
              {"n_group", 1}, {"topk_group", 1}};
}

std::vector<Shape> nemotron_h_shapes() {
  Json tiny = nemotron_fields(256, 4, 2, 64, 8, 32, 2, 16, 1024);
  tiny["hybrid_override_pattern"] = "M-M*-M";
  tiny["num_hidden_layers"] = 6;
  tiny["intermediate_size"] = 512;
  return {{"tiny", tiny}};
}

std::vector<Shape> nemotron_h_moe_shapes() {
  Json tiny = nemotron_fields(256, 4, 2, 64, 8, 32, 2, 16, 1024);
  tiny.update(routing(16, 4, 128, 256));
  tiny["hybrid_override_pattern"] = "MEM*EM";
  tiny["num_hidden_layers"] = 6;

  // tiny with its experts in a latent space (Nemotron 3 Super's form, without Puzzle blocks).
  Json latent = tiny;
  latent["moe_latent_size"] = 128;

  // A Puzzle model (NemotronHPuzzleForCausalLM, model.* tensor names): its MoE blocks differ in
  // expert width and experts used, and all are latent MoE (llama.cpp keeps one
  // moe_latent_size for the whole model, so a model cannot mix latent and plain MoE layers).
  Json puzzle = nemotron_fields(256, 4, 2, 64, 8, 32, 2, 16, 1024);
  puzzle.update(routing(16, 4, 128, 256));
  puzzle["moe_latent_size"] = 128;
  puzzle["num_hidden_layers"] = 6;
  puzzle["architectures"] = {"NemotronHPuzzleForCausalLM"};
  puzzle["model_type"] = "nemotron_h_puzzle";
  auto moe_block = [](int64_t F, int64_t used) {
    return Json{{"block_type", "moe"}, {"moe_intermediate_size", F}, {"num_experts_per_tok", used}};
  };
  puzzle["block_configs"] = {Json{{"block_type", "mamba"}}, moe_block(128, 4), Json{{"block_type", "attention"}},
                             moe_block(64, 2), Json{{"block_type", "mamba"}}, moe_block(96, 6)};

  // nano-l8: NVIDIA-Nemotron-3-Nano-30B-A3B's layer shapes (its config.json as quoted by
  // vLLM / Megatron-Bridge tests, and the GGUF dump in archs-gguf.md §2.7: hidden 2688, 32/2
  // heads of 128, Mamba2 64 heads x 64 with 8 groups and state 128, 128 experts of 1856, 6
  // used, shared expert 3712, routed_scaling_factor 2.5) with the first 8 layers of its pattern
  // MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME.
  Json nano = nemotron_fields(2688, 32, 2, 128, 64, 64, 8, 128, 262144);
  nano.update(routing(128, 6, 1856, 3712));
  nano["hybrid_override_pattern"] = "MEMEM*EM";
  nano["num_hidden_layers"] = 8;
  return {{"tiny", tiny}, {"tiny-latent", latent}, {"tiny-puzzle", puzzle}, {"nano-l8", nano}};
}

// Gated-DeltaNet hybrids, 3 linear : 1 full-attention layers. tiny: the zoo qwen35's layout
// (2 K heads with 2 V heads each, so the tiled V-head order is not the grouped one; 16 rotated
// dims whose IMROPE sections [3, 3, 2] cover all 8 pairs, archs-gguf.md §4.3). qwen35-l8: the
// layer dims of the released Qwen3.5-4B (Qwen/Qwen3.5-4B config.json, quoted by several
// independent sources: hidden 2560, intermediate 9216, 16 query / 4 KV heads of 256, linear 16 K
// heads / 32 V heads of 128, conv 4, partial_rotary_factor 0.25, mrope_section [11, 11, 10],
// rope_theta 1e7, tied embeddings) with 8 of its 32 layers; context 32768 instead of 262144
// (metadata only, keeps default KV caches small).
Json gdn_fields(int64_t E, int64_t L, int64_t H, int64_t Hkv, int64_t Dh, int64_t Hk, int64_t Dk,
                int64_t Hv, int64_t Dv, int64_t ctx) {
  Json types = Json::array();
  for (int64_t i = 0; i < L; ++i) types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return Json{{"hidden_size", E}, {"num_hidden_layers", L}, {"num_attention_heads", H},
              {"num_key_value_heads", Hkv}, {"head_dim", Dh}, {"attn_output_gate", true},
              {"linear_num_key_heads", Hk}, {"linear_key_head_dim", Dk},
              {"linear_num_value_heads", Hv}, {"linear_value_head_dim", Dv},
              {"linear_conv_kernel_dim", 4}, {"full_attention_interval", 4}, {"layer_types", types},
              {"max_position_embeddings", ctx}, {"mtp_num_hidden_layers", 0},
              {"mtp_use_dedicated_embeddings", false}};
}

Json qwen35_rope(std::vector<int64_t> mrope_section) {
  return Json{{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000000.0},
                                   {"partial_rotary_factor", 0.25}, {"mrope_interleaved", true},
                                   {"mrope_section", mrope_section}}}};
}

// The routed experts + gated shared expert (tiny: 8 experts of 128, 2 used, shared 128).
Json gdn_moe(int64_t n_exp, int64_t used, int64_t F_exp, int64_t F_shared) {
  return Json{{"num_experts", n_exp}, {"num_experts_per_tok", used}, {"moe_intermediate_size", F_exp},
              {"shared_expert_intermediate_size", F_shared}};
}

std::vector<Shape> qwen35_shapes() {
  Json tiny = gdn_fields(256, 4, 4, 2, 64, 2, 32, 4, 32, 4096);
  tiny.update(qwen35_rope({3, 3, 2}));
  tiny["intermediate_size"] = 512;
  tiny["tie_word_embeddings"] = true;  // as the released dense Qwen3.5 models
  Json l8 = gdn_fields(2560, 8, 16, 4, 256, 16, 128, 32, 128, 32768);
  l8.update(qwen35_rope({11, 11, 10}));
  l8["intermediate_size"] = 9216;
  l8["tie_word_embeddings"] = true;
  return {{"tiny", tiny}, {"qwen35-l8", l8}};
}

std::vector<Shape> qwen35moe_shapes() {
  // Qwen3.5-MoE's config has no intermediate_size; its head is untied.
  Json tiny = gdn_fields(256, 4, 4, 2, 64, 2, 32, 4, 32, 4096);
  tiny.update(qwen35_rope({3, 3, 2}));
  tiny.update(gdn_moe(8, 2, 128, 128));
  tiny["tie_word_embeddings"] = false;
  return {{"tiny", tiny}};
}

std::vector<Shape> qwen3next_shapes() {
  // Qwen3-Next-80B-A3B's config.json form: flat, NeoX rotary on a quarter of the head.
  Json tiny = gdn_fields(256, 4, 4, 2, 64, 2, 32, 4, 32, 4096);
  tiny.update(gdn_moe(8, 2, 128, 128));
  tiny.update(Json{{"intermediate_size", 512}, {"partial_rotary_factor", 0.25}, {"rope_theta", 5000000.0},
                   {"norm_topk_prob", true}, {"decoder_sparse_step", 1}, {"mlp_only_layers", Json::array()},
                   {"tie_word_embeddings", false}});
  return {{"tiny", tiny}};
}

// Gemma 4 (Gemma4ForConditionalGeneration's text_config). tiny: 6 layers S S S F S F (the full
// layers' head 64 wide with 1 KV head and no v_proj, attention_k_eq_v; the sliding ones 32 wide
// with 2 KV heads), a 16-token window (shorter than the test prompts, so the window matters),
// proportional RoPE on a quarter of the full head, soft-capped logits; tiny-moe adds 8 experts of
// 128, 2 used, beside every layer's MLP; tiny-ple adds per-layer embeddings of 32 and makes the
// last two layers (S F) KV-shared with double-wide MLPs, the KV-owning part ending S F as
// llama.cpp needs. 26b-a4b-l6 / 31b-l4: the layer dims of the released Gemma-4-26B-A4B and
// Gemma-4-31B (their config.json text_config as quoted by several independent projects: hidden
// 2816 / 5376, 16 / 32 query heads, 8 / 16 sliding KV heads of 256, 2 / 4 global KV heads of 512,
// k_eq_v, intermediate 2112 / 21504, 128 experts of 704 with 8 used (26B), sliding window 1024,
// soft-cap 30) with the first 6 / 4 layers of the 5:1 pattern, the last made full as transformers
// forces it; context 32768 instead of 262144 (metadata only, keeps default KV caches small).
Json gemma4_fields(int64_t E, int64_t H, int64_t Hkv, int64_t Hkv_full, int64_t Dh, int64_t Dh_full, int64_t F,
                   int64_t window, const std::vector<const char*>& types) {
  return Json{{"hidden_size", E}, {"num_hidden_layers", types.size()}, {"num_attention_heads", H},
              {"num_key_value_heads", Hkv}, {"num_global_key_value_heads", Hkv_full}, {"head_dim", Dh},
              {"global_head_dim", Dh_full}, {"attention_k_eq_v", true}, {"intermediate_size", F},
              {"sliding_window", window}, {"layer_types", types}, {"final_logit_softcapping", 30.0},
              {"hidden_activation", "gelu_pytorch_tanh"}, {"hidden_size_per_layer_input", 0},
              {"num_kv_shared_layers", 0}, {"use_double_wide_mlp", false}, {"enable_moe_block", false},
              {"max_position_embeddings", 32768}, {"tie_word_embeddings", true},
              {"rope_parameters", {{"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25},
                                                       {"rope_theta", 1000000.0}}},
                                   {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}}};
}

Json gemma4_moe(int64_t n_exp, int64_t used, int64_t F_exp) {
  return Json{{"enable_moe_block", true}, {"num_experts", n_exp}, {"top_k_experts", used},
              {"moe_intermediate_size", F_exp}};
}

std::vector<Shape> gemma4_shapes() {
  const char* S = "sliding_attention";
  const char* F = "full_attention";
  Json tiny = gemma4_fields(256, 4, 2, 1, 32, 64, 512, 16, {S, S, S, F, S, F});
  Json moe = tiny;
  moe.update(gemma4_moe(8, 2, 128));
  Json ple = tiny;
  ple.update(Json{{"hidden_size_per_layer_input", 32}, {"num_kv_shared_layers", 2}, {"use_double_wide_mlp", true}});
  Json a4b = gemma4_fields(2816, 16, 8, 2, 256, 512, 2112, 1024, {S, S, S, S, S, F});
  a4b.update(gemma4_moe(128, 8, 704));
  Json dense31 = gemma4_fields(5376, 32, 16, 4, 256, 512, 21504, 1024, {S, S, S, F});
  return {{"tiny", tiny}, {"tiny-moe", moe}, {"tiny-ple", ple}, {"26b-a4b-l6", a4b}, {"31b-l4", dense31}};
}

struct ArchInfo {
  const char* arch;
  const char* hf_class;
  const char* model_type;
  std::vector<Shape> (*shapes)();
};

constexpr ArchInfo kArchs[] = {
    {"qwen3", "Qwen3ForCausalLM", "qwen3", dense_shapes},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", dense_shapes},
    {"llama", "LlamaForCausalLM", "llama", dense_shapes},
    {"qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe", qwen3moe_shapes},
    {"nemotron_h", "NemotronHForCausalLM", "nemotron_h", nemotron_h_shapes},
    {"nemotron_h_moe", "NemotronHForCausalLM", "nemotron_h", nemotron_h_moe_shapes},
    {"qwen35", "Qwen3_5ForConditionalGeneration", "qwen3_5", qwen35_shapes},
    {"qwen35moe", "Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe", qwen35moe_shapes},
    {"qwen3next", "Qwen3NextForCausalLM", "qwen3_next", qwen3next_shapes},
    {"gemma4", "Gemma4ForConditionalGeneration", "gemma4", gemma4_shapes},
    {"gpt-oss", "GptOssForCausalLM", "gpt_oss", gpt_oss_shapes},
};

bool is_gdn(const ArchInfo& a) {
  return a.shapes == qwen35_shapes || a.shapes == qwen35moe_shapes || a.shapes == qwen3next_shapes;
}

bool is_nemotron(const ArchInfo& a) { return a.shapes == nemotron_h_shapes || a.shapes == nemotron_h_moe_shapes; }

// Qwen3.5 checkpoints (Qwen3_5(Moe)ForConditionalGeneration) keep the LM fields under
// text_config, model type "<model_type>_text".
Json nest_text_config(Json flat, const std::string& model_type) {
  Json c = {{"architectures", flat["architectures"]}, {"model_type", model_type},
            {"tie_word_embeddings", flat["tie_word_embeddings"]}};
  flat.erase("architectures");
  flat["model_type"] = model_type + "_text";
  c["text_config"] = std::move(flat);
  return c;
}

std::string shape_names(const ArchInfo& a) {
  std::string out;
  for (const Shape& s : a.shapes()) out += cat(out.empty() ? "" : ", ", s.name);
  return out;
}

}  // namespace

std::string synth_shapes_help() {
  std::string out;
  for (const ArchInfo& a : kArchs) out += cat(out.empty() ? "" : "; ", a.arch, ": ", shape_names(a));
  return out;
}

void check_synth_shape(const std::string& arch, const std::string& shape, bool mtp) {
  std::string archs;
  for (const ArchInfo& a : kArchs) {
    archs += cat(archs.empty() ? "" : ", ", a.arch);
    if (arch != a.arch) continue;
    FULGUR_CHECK(!mtp || is_gdn(a) || is_nemotron(a), "synth: --mtp: ", arch,
                 " has no MTP block (qwen35, qwen35moe, qwen3next, nemotron_h and nemotron_h_moe have)");
    for (const Shape& s : a.shapes()) {
      if (shape != s.name) continue;
      FULGUR_CHECK(!mtp || !s.fields.contains("block_configs"), "synth: --mtp: ", arch, " shape ", shape,
                   " is a Puzzle model, whose MTP head fulgur does not convert");
      return;
    }
    fail("synth: arch ", arch, " has no shape '", shape, "' (expected ", shape_names(a), ")");
  }
  fail("synth: unknown arch '", arch, "' (expected ", archs, ")");
}

Json synth_config(const std::string& arch, const std::string& shape, int64_t n_vocab, const Vocab& vocab,
                  bool mtp) {
  check_synth_shape(arch, shape, mtp);
  for (const ArchInfo& a : kArchs) {
    if (arch != a.arch) continue;
    for (const Shape& s : a.shapes()) {
      if (shape != s.name) continue;
      Json c = {{"architectures", {a.hf_class}}, {"model_type", a.model_type}, {"vocab_size", n_vocab},
                {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"hidden_act", "silu"},
                {"torch_dtype", "float32"}};
      if (is_nemotron(a)) {
        // Nemotron-H: no RoPE, relu2 MLPs, eps from layer_norm_epsilon.
        for (const char* key : {"rms_norm_eps", "rope_theta", "hidden_act"}) c.erase(key);
      }
      if (is_gdn(a)) c.erase("rope_theta");  // their shapes give it
      if (a.shapes == gemma4_shapes) {
        // RoPE per layer kind and the activation come with the shape; the per-layer embedding
        // table has the embedding's rows.
        for (const char* key : {"rope_theta", "hidden_act"}) c.erase(key);
        c["vocab_size_per_layer_input"] = n_vocab;
      }
      c.update(s.fields);
      if (mtp) c[is_nemotron(a) ? "num_nextn_predict_layers" : "mtp_num_hidden_layers"] = 1;
      if (vocab.bos_id >= 0) c["bos_token_id"] = vocab.bos_id;
      if (vocab.eos_id >= 0) c["eos_token_id"] = vocab.eos_id;
      return c.contains("rope_parameters") ? nest_text_config(std::move(c), a.model_type) : c;
    }
  }
  return {};  // unreachable: check_synth_shape threw
}

}  // namespace fulgur
