#include "convert/draft_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "convert/convert_plan.h"
#include "convert/draft_config.h"
#include "convert/draft_target.h"
#include "convert/nvfp4_checkpoint.h"
#include "convert/quant_policy.h"
#include "convert/safetensors.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "gguf/dflash_keys.h"
#include "gguf/gguf_writer.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
namespace g = dflash_gguf;

// requested type / always F32 / I64 id map / computed here (DraftTensor::values, computed_tensor)
enum class Kind { kFloat, kFloatF32, kD2t, kMade };

struct DraftTensor {
  std::string hf_name, gguf_name;
  std::vector<int64_t> hf_shape;  // HF order
  TensorRole role = TensorRole::kWeight;
  Kind kind = Kind::kFloat;
  int64_t permute_heads = 0;  // TensorPlan::permute_heads (llama-style q/k)
  std::vector<float> values;  // Kind::kMade
};

struct DraftPlan {
  std::vector<DraftTensor> tensors;
  std::set<std::string> ignored;
};

// `names`: planning_names() of the checkpoint.
DraftPlan plan_tensors(const DraftSpec& s, const std::set<std::string>& names) {
  const int64_t E = s.n_embd, Dh = s.head_dim, r = s.markov_rank;
  const int64_t qw = s.n_head * Dh, kvw = s.n_head_kv * Dh;
  const int64_t m = static_cast<int64_t>(s.target_layers.size());
  DraftPlan p;
  auto add = [&](std::string hf, std::string gg, std::vector<int64_t> shape,
                 TensorRole role = TensorRole::kWeight, Kind kind = Kind::kFloat) {
    p.tensors.push_back({std::move(hf), std::move(gg), std::move(shape), role, kind, 0, {}});
  };
  // Embeddings and LM head: copies of the target's in DeepSpec and speculators exports, absent
  // in z-lab ones (the runtime then borrows the target's).
  const bool lm_head = names.count("lm_head.weight") > 0;
  if (names.count("embed_tokens.weight")) {
    add("embed_tokens.weight", g::kTokenEmbd, {s.n_vocab, E}, TensorRole::kTokenEmbd);
  }
  if (lm_head) add("lm_head.weight", g::kOutput, {s.n_vocab_draft, E}, TensorRole::kOutput);
  FULGUR_CHECK(s.n_vocab_draft == s.n_vocab || lm_head, "draft ", s.describe(),
               ": a reduced draft vocabulary (", s.n_vocab_draft, " of ", s.n_vocab,
               ") needs the draft's own 'lm_head.weight'");
  if (s.n_vocab_draft != s.n_vocab) add("d2t", g::kD2t, {s.n_vocab_draft}, TensorRole::kWeight, Kind::kD2t);
  add("fc.weight", g::kFc, {E, m * s.target_hidden});
  add("hidden_norm.weight", g::kEncNorm, {E});
  add("norm.weight", g::kOutputNorm, {E});
  const bool gemma = s.backbone == DraftBackbone::kGemma4;
  if (gemma && 2 * s.rope_pairs < Dh) {
    // Proportional RoPE as llama.cpp's gemma converters write it: factor 1 for the rotated
    // pairs, 1e30 (no rotation) for the rest.
    std::vector<float> factors(static_cast<size_t>(Dh / 2), 1e30f);
    std::fill_n(factors.begin(), s.rope_pairs, 1.0f);
    p.tensors.push_back({"", g::kRopeFreqs, {Dh / 2}, TensorRole::kWeight, Kind::kMade, 0, std::move(factors)});
  }
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string h = cat("layers.", l, "."), b = cat("blk.", l, ".");
    add(h + "input_layernorm.weight", b + "attn_norm.weight", {E});
    add(h + "self_attn.q_proj.weight", b + "attn_q.weight", {qw, E});
    add(h + "self_attn.k_proj.weight", b + "attn_k.weight", {kvw, E});
    if (!s.k_eq_v) add(h + "self_attn.v_proj.weight", b + "attn_v.weight", {kvw, E});
    add(h + "self_attn.o_proj.weight", b + "attn_output.weight", {E, qw});
    add(h + "self_attn.q_norm.weight", b + "attn_q_norm.weight", {Dh});
    add(h + "self_attn.k_norm.weight", b + "attn_k_norm.weight", {Dh});
    if (gemma) {
      // Sandwich norms, the pre-FFN norm under its own name, the layer's output scalar.
      add(h + "post_attention_layernorm.weight", b + "post_attention_norm.weight", {E});
      add(h + "pre_feedforward_layernorm.weight", b + "ffn_norm.weight", {E});
      add(h + "post_feedforward_layernorm.weight", b + "post_ffw_norm.weight", {E});
      add(h + "layer_scalar", b + "layer_output_scale.weight", {1}, TensorRole::kWeight, Kind::kFloatF32);
    } else {
      add(h + "post_attention_layernorm.weight", b + "ffn_norm.weight", {E});
    }
    add(h + "mlp.gate_proj.weight", b + "ffn_gate.weight", {s.n_ff, E});
    add(h + "mlp.up_proj.weight", b + "ffn_up.weight", {s.n_ff, E});
    add(h + "mlp.down_proj.weight", b + "ffn_down.weight", {E, s.n_ff});
    if (s.dflash2) {
      const int64_t G = E / s.conv_group, K = s.conv_kernel;
      for (auto [hf, gg] : {std::pair{"attention_conv", "attn_conv"}, std::pair{"mlp_conv", "ffn_conv"}}) {
        add(h + hf + ".base_kernel", b + gg + "_base", {2, K, E}, TensorRole::kWeight, Kind::kFloatF32);
        add(h + hf + ".kernel_projection.weight", b + gg + "_proj.weight", {2 * K * G, E});
      }
    }
  }
  const std::string hp = s.head_prefix;
  if (r > 0) {
    add(hp + "markov_head.markov_w1.weight", g::kMarkovW1, {s.n_vocab, r});
    add(hp + "markov_head.markov_w2.weight", g::kMarkovW2, {s.n_vocab_draft, r});
    if (s.markov_type == "gated") {
      add(hp + "markov_head.gate_proj.weight", g::kMarkovGate, {r, E + r});
      add(hp + "markov_head.gate_proj.bias", g::kMarkovGateBias, {r});
    } else if (s.markov_type == "rnn") {
      add(hp + "markov_head.joint_proj.weight", g::kMarkovJoint, {3 * r, 2 * r + E});
      add(hp + "markov_head.joint_proj.bias", g::kMarkovJointBias, {3 * r});
    }
  }
  if (s.confidence) {
    add(hp + "confidence_head.proj.weight", g::kConfProj, {1, s.conf_with_markov ? E + r : E},
        TensorRole::kWeight, Kind::kFloatF32);
    add(hp + "confidence_head.proj.bias", g::kConfBias, {1});
  }
  if (s.dflash2) {
    add("candidate_selector.predecessor_codebook", g::kSelPred, {s.n_vocab, s.selector_rank});
    add("candidate_selector.successor_codebook", g::kSelSucc, {s.n_vocab, s.selector_rank});
    add("candidate_selector.hidden_projection.weight", g::kSelHidden, {s.selector_rank, E});
  }
  // Training-only or redundant tensors some exports carry.
  p.ignored = {"t2d", "verifier_lm_head.weight", "verifier_norm.weight"};
  return p;
}

// The checkpoint's d2t, validated (I64 or I32 offsets of the planned length).
const SafetensorsTensor& d2t_tensor(const Checkpoint& ckpt, const DraftTensor& t,
                                    const std::string& what) {
  const SafetensorsTensor* st = ckpt.find(t.hf_name);
  FULGUR_CHECK(st != nullptr, ckpt.dir(), ": missing tensor '", t.hf_name, "' (needed for ",
               t.gguf_name, " by ", what, ")");
  FULGUR_CHECK(st->shape == t.hf_shape, st->file, ": tensor '", t.hf_name, "' has ",
               st->n_elements(), " values in ", st->shape.size(), " dimensions but ",
               what, " implies one per draft token (", t.hf_shape[0], ")");
  FULGUR_CHECK(st->dtype == SafetensorsDType::kI64 || st->dtype == SafetensorsDType::kI32,
               st->file, ": tensor 'd2t' has dtype ", safetensors_dtype_name(st->dtype),
               ", expected I64 offsets");
  return *st;
}

// d2t offsets (target id = i + d2t[i]) -> absolute target ids, validated: inside the target
// vocabulary and distinct (a draft id maps to exactly one target id and vice versa).
std::vector<int64_t> absolute_d2t(const SafetensorsTensor& t, int64_t n_vocab) {
  const int64_t n = t.n_elements();
  std::vector<int64_t> ids(static_cast<size_t>(n));  // [V_d] absolute target ids
  std::vector<uint8_t> seen(static_cast<size_t>(n_vocab), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    if (t.dtype == SafetensorsDType::kI64) {
      std::memcpy(&off, t.data + i * 8, 8);
    } else {
      int32_t v = 0;
      std::memcpy(&v, t.data + i * 4, 4);
      off = v;
    }
    const int64_t id = i + off;
    FULGUR_CHECK(id >= 0 && id < n_vocab, t.file, ": d2t[", i, "] = ", off, " maps draft id ", i,
                 " to target id ", id, ", outside the vocabulary [0, ", n_vocab, ")");
    FULGUR_CHECK(!seen[static_cast<size_t>(id)], t.file, ": d2t maps two draft ids to target id ",
                 id);
    seen[static_cast<size_t>(id)] = 1;
    ids[static_cast<size_t>(i)] = id;
  }
  return ids;
}

std::string general_name(const ConvertOptions& o);

// general.* and the backbone's {arch}.* keys of a draft spec (DraftSpec, Eagle3Spec).
template <class Spec>
void write_backbone_keys(const Spec& s, int64_t n_layer, const std::string& arch, const ConvertOptions& o,
                         GgufWriter& w) {
  w.set_string("general.architecture", arch);
  w.set_string("general.name", general_name(o));
  w.set_u32("general.file_type", gguf_file_type(o.type));
  w.set_u32("general.quantization_version", 2);
  const std::string a = arch + ".";
  auto u32 = [&](const std::string& key, int64_t v) { w.set_u32(key, static_cast<uint32_t>(v)); };
  u32(a + "context_length", s.n_ctx);
  u32(a + "embedding_length", s.n_embd);
  u32(a + "block_count", n_layer);
  u32(a + "feed_forward_length", s.n_ff);
  u32(a + "attention.head_count", s.n_head);
  u32(a + "attention.head_count_kv", s.n_head_kv);
  u32(a + "attention.key_length", s.head_dim);
  u32(a + "attention.value_length", s.head_dim);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_eps));
  w.set_f32(a + "rope.freq_base", static_cast<float>(s.rope_theta));
  u32(a + "vocab_size", s.n_vocab);
}

void write_keys(const DraftSpec& s, const ConvertOptions& o, GgufWriter& w) {
  write_backbone_keys(s, s.n_layer, g::kArch, o, w);
  auto u32 = [&](const std::string& key, int64_t v) { w.set_u32(key, static_cast<uint32_t>(v)); };
  if (s.backbone == DraftBackbone::kGemma4) {  // llama.cpp's keys for Gemma4DSparkModel
    u32("dflash.rope.dimension_count", s.head_dim);
    w.set_f32(g::kEmbdScale, static_cast<float>(std::sqrt(static_cast<double>(s.n_embd))));
    w.set_f32(g::kAttnScale, 1.0f);
  }
  if (s.hidden_act != "silu") w.set_string(g::kHiddenAct, s.hidden_act);
  u32(g::kBlockSize, s.block_size);
  w.set_array<int32_t>(g::kTargetLayers, s.target_layers);
  u32(g::kTargetHidden, s.target_hidden);
  u32(g::kMaskToken, s.mask_token);
  w.set_bool(g::kSampleFromAnchor, s.sample_from_anchor);
  if (s.causal) w.set_bool(g::kCausal, true);
  w.set_bool(g::kHasConfidence, s.confidence);
  if (s.markov_rank > 0) w.set_string(g::kMarkovHeadType, s.markov_type);
  if (s.dflash2) {
    u32(g::kConvKernel, s.conv_kernel);
    u32(g::kConvGroup, s.conv_group);
    u32(g::kSelectorRank, s.selector_rank);
    u32(g::kSelectorTopK, s.selector_top_k);
    if (s.logit_scale != 1.0) w.set_f32(g::kLogitScale, static_cast<float>(s.logit_scale));
    if (s.softcap != 0.0) w.set_f32(g::kSoftcap, static_cast<float>(s.softcap));
  }
}


// Checks every planned tensor against the checkpoint, then writes the GGUF: keys (write_keys),
// the target's vocabulary (mask_token < 0: none of the draft's own), the tensors in plan order.
template <class WriteKeys>
void write_draft(const ConvertOptions& options, const Checkpoint& ckpt, const CheckpointQuant& quant,
                 const std::string& what, const std::string& hf_arch, const DraftPlan& plan, int64_t n_vocab,
                 const std::optional<DraftTarget>& target, int64_t mask_token,
                 const std::vector<std::string>& differences, WriteKeys write_keys) {
  // The weights are an ordinary tensor plan; d2t (integer offsets) is checked and written apart.
  ArchPlan weights;
  weights.what = what;
  weights.ignored = plan.ignored;
  const SafetensorsTensor* d2t = nullptr;
  for (const DraftTensor& t : plan.tensors) {
    if (t.kind == Kind::kMade) {
      weights.tensors.emplace_back(computed_tensor(t.gguf_name, ggml_shape_of(t.hf_shape), t.values))
          .role = TensorRole::kKeepF32;
      continue;
    }
    if (t.kind == Kind::kD2t) {
      d2t = &d2t_tensor(ckpt, t, what);
      weights.ignored.insert(t.hf_name);
      continue;
    }
    TensorPlan& tp = weights.tensors.emplace_back(same_bytes(t.hf_name, t.gguf_name, t.hf_shape));
    tp.role = t.kind == Kind::kFloatF32 ? TensorRole::kKeepF32 : t.role;
    tp.permute_heads = t.permute_heads;
  }
  const PlanSources sources = check_plan(weights, ckpt, options.in_dir, hf_arch, quant);
  for (const std::string& difference : differences) log_warn("convert: ", difference);
  if (!target) {
    log_warn("convert: no --target: the draft gets no vocabulary, so llama.cpp will not load it "
             "(fulgur uses the target's); pass --target MODEL.gguf or the target's HF folder");
  }

  GgufWriter w;
  write_keys(w);
  if (target) target->write_vocab_into(w, mask_token);
  ThreadPool pool(options.threads);
  size_t next = 0;  // index into weights.tensors, in plan order
  for (const DraftTensor& t : plan.tensors) {
    if (t.kind == Kind::kD2t) {
      const std::vector<int64_t> ids = absolute_d2t(*d2t, n_vocab);
      w.add_tensor(t.gguf_name, DType::kI64, ggml_shape_of(t.hf_shape), ids.data(),
                   ids.size() * sizeof(int64_t));
      continue;
    }
    const TensorPlan& tp = weights.tensors[next];
    const bool keep_f32 = tp.role == TensorRole::kKeepF32;
    const DType chosen = keep_f32 ? DType::kF32 : choose_tensor_type(options.type, tp.role, tp.shape);
    add_checkpoint_tensor(w, tp, sources[next], checkpoint_tensor_type(tp, sources[next], chosen, !keep_f32),
                          {}, &pool);
    ++next;
  }
  w.write(options.out_path);
}

std::string general_name(const ConvertOptions& o) {
  fs::path name = fs::path(o.in_dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  return name.filename().string();
}

// ---- EAGLE-3 (model/archs/eagle3.h; reference/llamacpp-speculative.md §6, §9.4,
// dspark-dflash-spec.md §6.4) ----------------------------------------------------------------

struct Eagle3Spec {
  std::string hf_arch;
  bool specforge = false;  // LlamaForCausalLMEagle3: flat config, the layer under `midlayer.`
  int64_t n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_ctx = 0;
  double rms_eps = 1e-6, rope_theta = 10000.0;
  int64_t n_vocab = 0, n_vocab_draft = 0, target_hidden = 0;
  std::vector<int32_t> extract_layers;  // target layer inputs (HF hidden_states indices)
  bool norm_before_residual = false;
  std::string describe() const { return cat(hf_arch, " EAGLE-3 draft"); }
};

Eagle3Spec parse_eagle3_config(const HfConfig& cfg, const std::optional<DraftTarget>& target) {
  Eagle3Spec s;
  s.hf_arch = cfg.get_string_array("architectures").at(0);
  s.specforge = s.hf_arch != "Eagle3Speculator";
  const HfConfig layer = s.specforge ? cfg : cfg.get_object("transformer_layer_config");
  s.n_embd = layer.get_dim("hidden_size");
  s.n_head = layer.get_dim("num_attention_heads");
  s.n_head_kv = layer.get_dim("num_key_value_heads", s.n_head);
  s.head_dim = layer.get_dim("head_dim", s.n_embd / s.n_head);
  s.n_ff = layer.get_dim("intermediate_size");
  s.n_ctx = layer.get_int("max_position_embeddings", 4096);
  s.rms_eps = layer.get_float("rms_norm_eps", 1e-6);
  s.rope_theta = layer.get_float("rope_theta", 10000.0);
  FULGUR_CHECK(!layer.has("rope_scaling") || layer.json().at("rope_scaling").is_null(), layer.source(), ": rope_scaling",
               " is set: RoPE scaling is not supported for EAGLE-3 drafts");
  s.n_vocab = layer.get_dim("vocab_size");
  s.n_vocab_draft = cfg.get_int("draft_vocab_size", s.n_vocab);
  FULGUR_CHECK(s.n_vocab_draft >= 1 && s.n_vocab_draft <= s.n_vocab, cfg.source(), ": draft_vocab_size", " is ",
               s.n_vocab_draft, "; must be in [1, vocab_size ", s.n_vocab, "]");
  s.target_hidden = cfg.has("target_hidden_size") && !cfg.json().at("target_hidden_size").is_null()
                        ? cfg.get_dim("target_hidden_size") : s.n_embd;
  s.norm_before_residual = cfg.get_bool("norm_before_residual", false);
  for (const char* key : {"norm_before_fc", "fc_norm", "norm_output"}) {
    FULGUR_CHECK(!cfg.get_bool(key, false), cfg.source(), ": ", key, " is true: not supported (llama.cpp's eagle3 has no "
                 "such norm)");
  }
  std::vector<int64_t> ids;
  if (!s.specforge && cfg.has("eagle_aux_hidden_state_layer_ids") &&
      !cfg.json().at("eagle_aux_hidden_state_layer_ids").is_null()) {
    ids = cfg.get_int_array("eagle_aux_hidden_state_layer_ids");
  } else if (s.specforge && cfg.has("eagle_config")) {
    const HfConfig ec = cfg.get_object("eagle_config");
    if (ec.has("eagle_aux_hidden_state_layer_ids")) ids = ec.get_int_array("eagle_aux_hidden_state_layer_ids");
  }
  if (ids.empty()) {
    // EAGLE-3's default taps (low, middle, high): the inputs of layers 2, N/2 and N-3.
    FULGUR_CHECK(target.has_value(), cfg.source(), ": the config names no tapped target layers "
                 "(eagle_aux_hidden_state_layer_ids); pass --target so that EAGLE-3's default (2, N/2, N-3) "
                 "can be taken from the target's layer count");
    const int64_t n = target->n_layer();
    ids = {2, n / 2, n - 3};
  }
  FULGUR_CHECK(ids.size() == 3, cfg.source(), ": ", ids.size(), " tapped target layers; EAGLE-3 (and llama.cpp's "
               "eagle3) takes exactly 3");
  for (int64_t id : ids) s.extract_layers.push_back(static_cast<int32_t>(id));
  if (target) {
    FULGUR_CHECK(target->n_vocab() == s.n_vocab && target->n_embd() == s.target_hidden, s.describe(), " (",
                 cfg.source(), ": vocab_size ", s.n_vocab, ", target hidden ", s.target_hidden,
                 ") does not fit the target (vocabulary ", target->n_vocab(), ", hidden ", target->n_embd(), ")");
    for (int32_t id : s.extract_layers) {
      FULGUR_CHECK(id >= 0 && id <= target->n_layer(), s.describe(), ": tapped layer ", id,
                   " is outside the target's ", target->n_layer(), " layers");
    }
  }
  return s;
}

DraftPlan plan_eagle3(const Eagle3Spec& s, const std::set<std::string>& names) {
  const int64_t E = s.n_embd, Dh = s.head_dim, qw = s.n_head * Dh, kvw = s.n_head_kv * Dh;
  DraftPlan p;
  auto add = [&](std::string hf, std::string gg, std::vector<int64_t> shape, TensorRole role = TensorRole::kWeight,
                 Kind kind = Kind::kFloat, int64_t permute = 0) {
    p.tensors.push_back({std::move(hf), std::move(gg), std::move(shape), role, kind, permute, {}});
  };
  if (names.count("embed_tokens.weight")) add("embed_tokens.weight", "token_embd.weight", {s.n_vocab, E}, TensorRole::kTokenEmbd);
  add("fc.weight", "fc.weight", {E, 3 * s.target_hidden});
  add("norm.weight", "output_norm.weight", {E});
  add("lm_head.weight", "output.weight", {s.n_vocab_draft, E}, TensorRole::kOutput);
  if (s.n_vocab_draft != s.n_vocab) add("d2t", "d2t", {s.n_vocab_draft}, TensorRole::kWeight, Kind::kD2t);
  const std::string h = s.specforge ? "midlayer." : "layers.0.", b = "blk.0.";
  add(h + "input_layernorm.weight", b + "attn_norm.weight", {E});
  add(h + "hidden_norm.weight", b + "attn_norm_2.weight", {E});  // llama.cpp: LLM_TENSOR_ATTN_NORM_2
  // HF's rotate-half q/k rows to llama.cpp's interleaved layout, as its llama converter does.
  add(h + "self_attn.q_proj.weight", b + "attn_q.weight", {qw, 2 * E}, TensorRole::kWeight, Kind::kFloat, s.n_head);
  add(h + "self_attn.k_proj.weight", b + "attn_k.weight", {kvw, 2 * E}, TensorRole::kWeight, Kind::kFloat, s.n_head_kv);
  add(h + "self_attn.v_proj.weight", b + "attn_v.weight", {kvw, 2 * E});
  add(h + "self_attn.o_proj.weight", b + "attn_output.weight", {E, qw});
  add(h + "post_attention_layernorm.weight", b + "ffn_norm.weight", {E});
  add(h + "mlp.gate_proj.weight", b + "ffn_gate.weight", {s.n_ff, E});
  add(h + "mlp.up_proj.weight", b + "ffn_up.weight", {s.n_ff, E});
  add(h + "mlp.down_proj.weight", b + "ffn_down.weight", {E, s.n_ff});
  p.ignored = {"t2d"};
  return p;
}

void write_eagle3_keys(const Eagle3Spec& s, const ConvertOptions& o, GgufWriter& w) {
  write_backbone_keys(s, 1, "eagle3", o, w);
  const std::string a = "eagle3.";
  w.set_array<int32_t>(a + "target_layers", s.extract_layers);  // llama.cpp reads {arch}.target_layers
  w.set_u32(a + "target_hidden_size", static_cast<uint32_t>(s.target_hidden));
  w.set_bool(a + "norm_before_residual", s.norm_before_residual);
}

}  // namespace

bool is_eagle3_config(const HfConfig& cfg) {
  if (!cfg.has("architectures")) return false;
  const std::vector<std::string> a = cfg.get_string_array("architectures");
  return !a.empty() && (a[0] == "Eagle3Speculator" || a[0] == "LlamaForCausalLMEagle3");
}

void convert_eagle3_to_gguf(const ConvertOptions& options, const HfConfig& cfg) {
  const CheckpointQuant quant = parse_quantization_config(cfg);
  const Checkpoint ckpt(options.in_dir);
  std::optional<DraftTarget> target;
  if (!options.target.empty()) target.emplace(options.target);
  const Eagle3Spec spec = parse_eagle3_config(cfg, target);
  const DraftPlan plan = plan_eagle3(spec, planning_names(ckpt));
  write_draft(options, ckpt, quant, spec.describe(), spec.hf_arch, plan, spec.n_vocab, target, -1, {},
              [&](GgufWriter& w) { write_eagle3_keys(spec, options, w); });
}

void convert_draft_to_gguf(const ConvertOptions& options, const HfConfig& cfg) {
  const CheckpointQuant quant = parse_quantization_config(cfg);
  const Checkpoint ckpt(options.in_dir);
  const std::set<std::string> names = planning_names(ckpt);
  const DraftSpec spec = parse_draft_config(cfg, names);
  const DraftPlan plan = plan_tensors(spec, names);
  std::optional<DraftTarget> target;
  if (!options.target.empty()) {
    target.emplace(options.target);
    target->check(spec);
  }
  write_draft(options, ckpt, quant, spec.describe(), spec.hf_arch, plan, spec.n_vocab, target, spec.mask_token,
              llamacpp_differences(spec), [&](GgufWriter& w) { write_keys(spec, options, w); });
}

}  // namespace fulgur
