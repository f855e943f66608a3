#include "synth/draft_synth.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "convert/hf_config.h"
#include "convert/safetensors_writer.h"
#include "core/error.h"
#include "synth/random.h"

namespace fulgur {
namespace {

// n values uniform in [center - spread, center + spread], keyed by the canonical name.
std::vector<float> draw(const std::string& canonical, uint64_t seed, int64_t n, float center,
                        float spread) {
  uint64_t state = seed ^ synth::name_hash(canonical);
  std::vector<float> v(static_cast<size_t>(n));  // [n]
  for (float& x : v) x = synth::next_uniform(state, center, spread);
  return v;
}

class Emitter {
 public:
  Emitter(const DraftSynthOptions& o, std::string head_prefix)
      : o_(o), head_prefix_(std::move(head_prefix)) {}

  // A tensor stored under `name`, drawn by canonical name `key` (= name without format
  // prefixes) so every format holds the same values.
  void add(const std::string& key, std::vector<int64_t> shape, float center, float spread) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    put(key, std::move(shape), draw(key, o_.seed, n, center, spread));
  }
  void put(const std::string& key, std::vector<int64_t> shape, const std::vector<float>& values) {
    const bool head = key.starts_with("markov_head.") || key.starts_with("confidence_head.");
    w_.add_f32(head ? head_prefix_ + key : key, std::move(shape), values);
  }
  SafetensorsWriter& writer() { return w_; }

 private:
  const DraftSynthOptions& o_;
  std::string head_prefix_;
  SafetensorsWriter w_;
};

float fan(int64_t n) { return std::sqrt(3.0f) / std::sqrt(static_cast<float>(n)); }

bool gemma_backbone(const DraftSynthOptions& o) {
  FULGUR_CHECK(o.backbone == "qwen3" || o.backbone == "gemma4", "synth_draft_checkpoint: backbone '", o.backbone,
               "' (qwen3 or gemma4)");
  return o.backbone == "gemma4";
}

// A Gemma 4 text config as DeepSpec copies it from the target (the draft's layers are full
// attention layers with the target's full-layer geometry).
nlohmann::json gemma_backbone_json(const DraftSynthOptions& o) {
  nlohmann::json c;
  c["model_type"] = "gemma4_text";
  c["hidden_size"] = o.n_embd;
  c["num_hidden_layers"] = o.n_layer;
  c["num_attention_heads"] = o.n_head;
  // With attention_k_eq_v the full layers' (the draft's) KV heads are num_global_key_value_heads
  // and num_key_value_heads is the sliding layers' (unused); without it, the draft's.
  c["num_key_value_heads"] = o.k_eq_v ? 2 * o.n_head_kv : o.n_head_kv;
  c["num_global_key_value_heads"] = o.n_head_kv;
  c["head_dim"] = o.head_dim / 2;              // likewise
  c["global_head_dim"] = o.head_dim;
  c["attention_k_eq_v"] = o.k_eq_v;
  c["intermediate_size"] = o.n_ff;
  c["vocab_size"] = o.n_vocab;
  c["rms_norm_eps"] = 1e-6;
  c["max_position_embeddings"] = 4096;
  c["hidden_activation"] = "gelu_pytorch_tanh";
  c["attention_bias"] = false;
  c["tie_word_embeddings"] = false;
  c["final_logit_softcapping"] = nullptr;
  c["sliding_window"] = 512;
  c["rope_parameters"] = {
      {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", o.rope_theta}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  c["layer_types"] = std::vector<std::string>(static_cast<size_t>(o.n_layer), "full_attention");
  return c;
}

nlohmann::json backbone_json(const DraftSynthOptions& o) {
  if (gemma_backbone(o)) return gemma_backbone_json(o);
  nlohmann::json c;
  c["model_type"] = "qwen3";
  c["hidden_size"] = o.n_embd;
  c["num_hidden_layers"] = o.n_layer;
  c["num_attention_heads"] = o.n_head;
  c["num_key_value_heads"] = o.n_head_kv;
  c["head_dim"] = o.head_dim;
  c["intermediate_size"] = o.n_ff;
  c["vocab_size"] = o.n_vocab;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = o.rope_theta;
  c["max_position_embeddings"] = 4096;
  c["hidden_act"] = "silu";
  c["attention_bias"] = false;
  c["tie_word_embeddings"] = false;
  c["layer_types"] = std::vector<std::string>(static_cast<size_t>(o.n_layer), "full_attention");
  return c;
}

void put_heads_json(const DraftSynthOptions& o, nlohmann::json& c) {
  c["markov_rank"] = o.markov.empty() ? 0 : o.markov_rank;
  if (!o.markov.empty()) c["markov_head_type"] = o.markov;
  c["enable_confidence_head"] = o.confidence;
  if (o.confidence) c["confidence_head_with_markov"] = o.conf_with_markov;
}

nlohmann::json config_json(const DraftSynthOptions& o) {
  const std::vector<int64_t>& ids = o.target_layer_ids;
  if (o.format == "deepspec") {
    nlohmann::json c = backbone_json(o);
    c["architectures"] = {gemma_backbone(o) ? "Gemma4DSparkModel" : "Qwen3DSparkModel"};
    c["num_target_layers"] = o.n_target_layers;
    c["block_size"] = o.block_size;
    c["mask_token_id"] = o.mask_token_id;
    c["target_layer_ids"] = ids;
    c["num_anchors"] = 16;
    put_heads_json(o, c);
    return c;
  }
  if (o.format == "zlab" || o.format == "dflash2") {
    nlohmann::json c = backbone_json(o);
    c["architectures"] = {o.format == "zlab" ? "DFlashDraftModel" : "DFlash2DraftModel"};
    c["num_target_layers"] = o.n_target_layers;
    nlohmann::json dc;
    dc["mask_token_id"] = o.mask_token_id;
    dc["target_layer_ids"] = ids;
    if (o.format == "dflash2") {
      dc["block_size"] = o.block_size;
      dc["conv_kernel_size"] = o.conv_kernel;
      dc["conv_group_size"] = o.conv_group;
      dc["selector_rank"] = o.selector_rank;
      dc["selector_top_k"] = o.selector_top_k;
    } else {
      c["block_size"] = o.block_size;
    }
    c["dflash_config"] = dc;
    return c;
  }
  if (o.format == "speculators") {
    const bool dspark = !o.markov.empty();
    nlohmann::json c;
    c["architectures"] = {gemma_backbone(o) ? "Gemma4DSparkModel" : dspark ? "DSparkSpeculator" : "DFlashSpeculator"};
    c["speculators_model_type"] = dspark ? "dspark" : "dflash";
    c["speculators_version"] = "0.3.0";
    c["transformer_layer_config"] = backbone_json(o);
    c["draft_vocab_size"] = o.draft_vocab > 0 ? o.draft_vocab : o.n_vocab;
    c["block_size"] = o.block_size;
    c["target_hidden_size"] = nullptr;
    std::vector<int64_t> aux;
    for (int64_t id : ids) aux.push_back(id + 1);  // HF hidden-states index
    c["aux_hidden_state_layer_ids"] = aux;
    c["mask_token_id"] = o.mask_token_id;
    c["sample_from_anchor"] = o.sample_from_anchor;
    const int64_t drafts = o.sample_from_anchor ? o.block_size : o.block_size - 1;
    c["speculators_config"] = {{"algorithm", dspark ? "dspark" : "dflash"},
                               {"proposal_methods",
                                {{{"proposal_type", "greedy"}, {"speculative_tokens", drafts}}}},
                               {"default_proposal_method", "greedy"}};
    if (dspark) put_heads_json(o, c);
    return c;
  }
  if (o.format == "specforge") {
    nlohmann::json c = backbone_json(o);
    c["architectures"] = {"DSparkDraftModel"};
    c["block_size"] = o.block_size;
    nlohmann::json dc;
    dc["projector_type"] = "dspark";
    dc["mask_token_id"] = o.mask_token_id;
    dc["target_layer_ids"] = ids;
    dc["attention_mode"] = "gqa";
    put_heads_json(o, dc);
    c["dflash_config"] = dc;
    return c;
  }
  fail("synth_draft_checkpoint: unknown format '", o.format,
       "' (expected deepspec, zlab, dflash2, speculators or specforge)");
}

// Reduced vocabulary: every other id from 0 (ascending, as speculators selects them).
std::vector<int64_t> kept_ids(int64_t V, int64_t Vd) {
  FULGUR_CHECK(Vd <= V && (Vd == V || 2 * Vd <= V), "synth_draft_checkpoint: draft_vocab ", Vd,
               " must be at most half of n_vocab ", V);
  std::vector<int64_t> kept(static_cast<size_t>(Vd));  // [V_d] target ids
  for (int64_t i = 0; i < Vd; ++i) kept[static_cast<size_t>(i)] = Vd == V ? i : 2 * i;
  return kept;
}

// [V][cols] -> the kept rows [V_d][cols].
std::vector<float> kept_rows(const std::vector<float>& full, const std::vector<int64_t>& kept, int64_t cols) {
  std::vector<float> out(kept.size() * static_cast<size_t>(cols));
  for (size_t i = 0; i < kept.size(); ++i) {
    std::memcpy(out.data() + i * cols, full.data() + kept[i] * cols, static_cast<size_t>(cols) * sizeof(float));
  }
  return out;
}

// d2t offsets (target = i + d2t[i]) and the t2d mask, when the vocabulary is reduced.
void add_vocab_maps(Emitter& e, const std::vector<int64_t>& kept, int64_t V) {
  const int64_t Vd = static_cast<int64_t>(kept.size());
  if (Vd == V) return;
  std::vector<int64_t> d2t(static_cast<size_t>(Vd));
  std::vector<uint8_t> t2d(static_cast<size_t>(V), 0);
  for (int64_t i = 0; i < Vd; ++i) {
    d2t[static_cast<size_t>(i)] = kept[static_cast<size_t>(i)] - i;
    t2d[static_cast<size_t>(kept[static_cast<size_t>(i)])] = 1;
  }
  e.writer().add("d2t", SafetensorsDType::kI64, {Vd}, {reinterpret_cast<const uint8_t*>(d2t.data()), d2t.size() * 8});
  e.writer().add("t2d", SafetensorsDType::kBool, {V}, t2d);
}

void write_checkpoint(Emitter& e, const std::string& out_dir, const nlohmann::json& config) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  FULGUR_CHECK(!ec, "synth: cannot create '", out_dir, "': ", ec.message());
  e.writer().write((std::filesystem::path(out_dir) / "model.safetensors").string());
  write_json_file((std::filesystem::path(out_dir) / "config.json").string(), config);
}

}  // namespace

void synth_eagle3_checkpoint(const DraftSynthOptions& o) {
  FULGUR_CHECK(o.n_vocab > 0 && !o.out_dir.empty(), "synth_eagle3_checkpoint: n_vocab and out_dir are required");
  FULGUR_CHECK(o.format == "speculators" || o.format == "specforge", "synth_eagle3_checkpoint: format '", o.format,
               "' (speculators or specforge)");
  FULGUR_CHECK(o.target_layer_ids.size() == 3, "synth_eagle3_checkpoint: EAGLE-3 taps 3 target layers");
  const int64_t E = o.n_embd, Dh = o.head_dim, V = o.n_vocab, Et = o.target_hidden > 0 ? o.target_hidden : E;
  const int64_t qw = o.n_head * Dh, kvw = o.n_head_kv * Dh;
  const int64_t Vd = o.draft_vocab > 0 ? o.draft_vocab : V;
  const std::vector<int64_t> kept = kept_ids(V, Vd);
  // Llama layer config (EAGLE-3 drafts are llama layers: no q/k norms).
  nlohmann::json layer = backbone_json(o);
  layer["model_type"] = "llama";
  layer.erase("layer_types");
  nlohmann::json c;
  if (o.format == "speculators") {
    c["architectures"] = {"Eagle3Speculator"};
    c["speculators_model_type"] = "eagle3";
    c["speculators_version"] = "0.3.0";
    c["transformer_layer_config"] = layer;
    c["eagle_aux_hidden_state_layer_ids"] = o.target_layer_ids;
    c["speculators_config"] = {{"algorithm", "eagle3"},
                               {"proposal_methods", {{{"proposal_type", "greedy"}, {"speculative_tokens", 3}}}},
                               {"default_proposal_method", "greedy"}};
  } else {
    c = layer;
    c["architectures"] = {"LlamaForCausalLMEagle3"};
    c["eagle_config"] = {{"eagle_aux_hidden_state_layer_ids", o.target_layer_ids}};
  }
  c["draft_vocab_size"] = Vd;
  c["target_hidden_size"] = Et;
  c["norm_before_residual"] = o.norm_before_residual;

  Emitter e(o, "");
  const std::vector<float> embed = o.embed.empty() ? draw("embed_tokens.weight", o.seed, V * E, 0.0f, fan(E)) : o.embed;
  const std::vector<float> head = o.lm_head.empty() ? draw("lm_head.weight", o.seed, V * E, 0.0f, fan(E)) : o.lm_head;
  e.put("embed_tokens.weight", {V, E}, embed);
  e.put("lm_head.weight", {Vd, E}, kept_rows(head, kept, E));
  e.add("fc.weight", {E, 3 * Et}, 0.0f, fan(3 * Et));
  e.add("norm.weight", {E}, 4.0f, 1.0f);
  const std::string p = o.format == "specforge" ? "midlayer." : "layers.0.";
  // Drawn under the speculators names, so both formats hold the same values.
  auto add = [&](const std::string& key, std::vector<int64_t> shape, float center, float spread) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    e.writer().add_f32(p + key, std::move(shape), draw("layers.0." + key, o.seed, n, center, spread));
  };
  add("input_layernorm.weight", {E}, 1.0f, 0.2f);
  add("hidden_norm.weight", {E}, 1.0f, 0.2f);
  add("self_attn.q_proj.weight", {qw, 2 * E}, 0.0f, fan(2 * E));
  add("self_attn.k_proj.weight", {kvw, 2 * E}, 0.0f, fan(2 * E));
  add("self_attn.v_proj.weight", {kvw, 2 * E}, 0.0f, fan(2 * E));
  add("self_attn.o_proj.weight", {E, qw}, 0.0f, fan(qw));
  add("post_attention_layernorm.weight", {E}, 1.0f, 0.2f);
  add("mlp.gate_proj.weight", {o.n_ff, E}, 0.0f, fan(E));
  add("mlp.up_proj.weight", {o.n_ff, E}, 0.0f, fan(E));
  add("mlp.down_proj.weight", {E, o.n_ff}, 0.0f, fan(o.n_ff));
  add_vocab_maps(e, kept, V);
  write_checkpoint(e, o.out_dir, c);
}

void synth_draft_checkpoint(const DraftSynthOptions& o) {
  FULGUR_CHECK(o.n_vocab > 0 && !o.out_dir.empty(), "synth_draft_checkpoint: n_vocab and out_dir are required");
  const bool stores_embeddings = o.format == "deepspec" || o.format == "speculators" || o.format == "specforge";
  FULGUR_CHECK(o.markov.empty() || o.format == "deepspec" || o.format == "speculators" ||
                   o.format == "specforge",
               "synth_draft_checkpoint: format '", o.format, "' has no Markov head");
  FULGUR_CHECK(o.format != "specforge" || !o.markov.empty(),
               "synth_draft_checkpoint: specforge exports are DSpark (set markov)");
  FULGUR_CHECK(o.draft_vocab == 0 || o.format == "speculators",
               "synth_draft_checkpoint: only speculators exports have a reduced vocabulary");
  FULGUR_CHECK(!gemma_backbone(o) || o.format == "deepspec" || o.format == "speculators",
               "synth_draft_checkpoint: Gemma 4 drafts are written in the deepspec or speculators format");
  const bool gemma = gemma_backbone(o);
  const bool markov = !o.markov.empty() && o.format != "zlab" && o.format != "dflash2";
  const bool confidence = o.confidence && markov;
  const nlohmann::json config = config_json(o);

  const int64_t E = o.n_embd, Dh = o.head_dim, V = o.n_vocab, r = o.markov_rank;
  const int64_t m = static_cast<int64_t>(o.target_layer_ids.size());
  const int64_t qw = o.n_head * Dh, kvw = o.n_head_kv * Dh;
  const int64_t Vd = o.draft_vocab > 0 ? o.draft_vocab : V;
  const std::vector<int64_t> kept = kept_ids(V, Vd);

  Emitter e(o, o.logit_head_prefix ? "logit_head." : "");
  auto rows_of = [&](const std::vector<float>& full, int64_t cols) { return kept_rows(full, kept, cols); };
  if (stores_embeddings) {
    const std::vector<float> embed =
        o.embed.empty() ? draw("embed_tokens.weight", o.seed, V * E, 0.0f, fan(E)) : o.embed;
    const std::vector<float> head =
        o.lm_head.empty() ? draw("lm_head.weight", o.seed, V * E, 0.0f, fan(E)) : o.lm_head;
    FULGUR_CHECK(static_cast<int64_t>(embed.size()) == V * E && static_cast<int64_t>(head.size()) == V * E,
                 "synth_draft_checkpoint: embed / lm_head must hold n_vocab x n_embd values");
    e.put("embed_tokens.weight", {V, E}, embed);
    e.put("lm_head.weight", {Vd, E}, rows_of(head, E));
  }
  e.add("fc.weight", {E, m * E}, 0.0f, fan(m * E));
  e.add("hidden_norm.weight", {E}, 1.0f, 0.2f);
  e.add("norm.weight", {E}, 4.0f, 1.0f);
  for (int64_t l = 0; l < o.n_layer; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    e.add(p + "input_layernorm.weight", {E}, 1.0f, 0.2f);
    e.add(p + "self_attn.q_proj.weight", {qw, E}, 0.0f, fan(E));
    e.add(p + "self_attn.k_proj.weight", {kvw, E}, 0.0f, fan(E));
    if (!gemma || !o.k_eq_v) e.add(p + "self_attn.v_proj.weight", {kvw, E}, 0.0f, fan(E));
    e.add(p + "self_attn.o_proj.weight", {E, qw}, 0.0f, fan(qw));
    e.add(p + "self_attn.q_norm.weight", {Dh}, 2.0f, 0.4f);
    e.add(p + "self_attn.k_norm.weight", {Dh}, 2.0f, 0.4f);
    e.add(p + "post_attention_layernorm.weight", {E}, 1.0f, 0.2f);
    if (gemma) {
      e.add(p + "pre_feedforward_layernorm.weight", {E}, 1.0f, 0.2f);
      e.add(p + "post_feedforward_layernorm.weight", {E}, 1.0f, 0.2f);
      e.add(p + "layer_scalar", {1}, 0.75f, 0.25f);
    }
    e.add(p + "mlp.gate_proj.weight", {o.n_ff, E}, 0.0f, fan(E));
    e.add(p + "mlp.up_proj.weight", {o.n_ff, E}, 0.0f, fan(E));
    e.add(p + "mlp.down_proj.weight", {E, o.n_ff}, 0.0f, fan(o.n_ff));
    if (o.format == "dflash2") {
      const int64_t K = o.conv_kernel, G = E / o.conv_group;
      for (const char* sub : {"attention_conv", "mlp_conv"}) {
        const std::string q = p + sub;
        if (o.dflash2_identity) {
          std::vector<float> base(static_cast<size_t>(2 * K * E), 0.0f);  // [2][K][E]
          for (int64_t side = 0; side < 2; ++side) {
            std::fill(base.begin() + side * K * E, base.begin() + side * K * E + E, 1.0f);
          }
          e.put(q + ".base_kernel", {2, K, E}, base);
          e.put(q + ".kernel_projection.weight", {2 * K * G, E},
                std::vector<float>(static_cast<size_t>(2 * K * G * E), 0.0f));
        } else {
          e.add(q + ".base_kernel", {2, K, E}, 0.5f, 0.5f);
          e.add(q + ".kernel_projection.weight", {2 * K * G, E}, 0.0f, 0.2f * fan(E));
        }
      }
    }
  }
  if (markov) {
    e.add("markov_head.markov_w1.weight", {V, r}, 0.0f, 1.0f);
    const std::vector<float> w2 = o.zero_w2 ? std::vector<float>(static_cast<size_t>(V * r), 0.0f)
                                            : draw("markov_head.markov_w2.weight", o.seed, V * r, 0.0f, 4.0f * fan(r));
    e.put("markov_head.markov_w2.weight", {Vd, r}, rows_of(w2, r));
    if (o.markov == "gated") {
      e.add("markov_head.gate_proj.weight", {r, E + r}, 0.0f, fan(E + r));
      e.add("markov_head.gate_proj.bias", {r}, 0.0f, 0.5f);
    } else if (o.markov == "rnn") {
      e.add("markov_head.joint_proj.weight", {3 * r, 2 * r + E}, 0.0f, fan(2 * r + E));
      e.add("markov_head.joint_proj.bias", {3 * r}, 0.0f, 0.5f);
    }
  }
  if (confidence) {
    const int64_t dim = o.conf_with_markov ? E + r : E;
    e.add("confidence_head.proj.weight", {1, dim}, 0.0f, 2.0f * fan(dim));
    e.add("confidence_head.proj.bias", {1}, 0.0f, 0.5f);
  }
  if (o.format == "dflash2") {
    const int64_t R = o.selector_rank;
    e.add("candidate_selector.predecessor_codebook", {V, R}, 0.0f, 1.0f);
    e.put("candidate_selector.successor_codebook", {V, R},
          o.dflash2_identity ? std::vector<float>(static_cast<size_t>(V * R), 0.0f)
                             : draw("candidate_selector.successor_codebook", o.seed, V * R, 0.0f, 1.0f));
    e.add("candidate_selector.hidden_projection.weight", {R, E}, 0.0f, 2.0f * fan(E));
  }
  add_vocab_maps(e, kept, V);
  write_checkpoint(e, o.out_dir, config);
}

}  // namespace fulgur
