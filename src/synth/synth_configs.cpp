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
  return {{"tiny", tiny}, {"tiny-puzzle", puzzle}, {"nano-l8", nano}};
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
};

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

void check_synth_shape(const std::string& arch, const std::string& shape) {
  std::string archs;
  for (const ArchInfo& a : kArchs) {
    archs += cat(archs.empty() ? "" : ", ", a.arch);
    if (arch != a.arch) continue;
    for (const Shape& s : a.shapes()) {
      if (shape == s.name) return;
    }
    fail("synth: arch ", arch, " has no shape '", shape, "' (expected ", shape_names(a), ")");
  }
  fail("synth: unknown arch '", arch, "' (expected ", archs, ")");
}

Json synth_config(const std::string& arch, const std::string& shape, int64_t n_vocab, const Vocab& vocab) {
  check_synth_shape(arch, shape);
  for (const ArchInfo& a : kArchs) {
    if (arch != a.arch) continue;
    for (const Shape& s : a.shapes()) {
      if (shape != s.name) continue;
      Json c = {{"architectures", {a.hf_class}}, {"model_type", a.model_type}, {"vocab_size", n_vocab},
                {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"hidden_act", "silu"},
                {"torch_dtype", "float32"}};
      if (a.shapes != dense_shapes && a.shapes != qwen3moe_shapes) {
        // Nemotron-H: no RoPE, relu2 MLPs, eps from layer_norm_epsilon.
        for (const char* key : {"rms_norm_eps", "rope_theta", "hidden_act"}) c.erase(key);
      }
      c.update(s.fields);
      if (vocab.bos_id >= 0) c["bos_token_id"] = vocab.bos_id;
      if (vocab.eos_id >= 0) c["eos_token_id"] = vocab.eos_id;
      return c;
    }
  }
  return {};  // unreachable: check_synth_shape threw
}

}  // namespace fulgur
