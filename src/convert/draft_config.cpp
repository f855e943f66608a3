#include "convert/draft_config.h"

#include <cmath>

#include "core/error.h"
#include "core/log.h"

namespace fulgur {
namespace {

struct FormatEntry {
  const char* hf_arch;
  DraftFormat format;
};

constexpr FormatEntry kFormats[] = {
    {"Qwen3DSparkModel", DraftFormat::kDeepSpec},
    {"DFlashDraftModel", DraftFormat::kZlabDflash},
    {"DFlash2DraftModel", DraftFormat::kDflash2},
    {"DFlashSpeculator", DraftFormat::kSpeculators},
    {"DSparkSpeculator", DraftFormat::kSpeculators},
    {"DSparkDraftModel", DraftFormat::kSpecForge},
    {"Gemma4DSparkModel", DraftFormat::kDeepSpec},
};

constexpr const char* kGemmaDraftArch = "Gemma4DSparkModel";

std::string first_arch(const HfConfig& cfg) {
  if (!cfg.has("architectures")) return "";
  const std::vector<std::string> names = cfg.get_string_array("architectures");
  return names.empty() ? "" : names[0];
}

void parse_qwen3_backbone(const HfConfig& b, DraftSpec& s);
void parse_gemma4_backbone(const HfConfig& b, DraftSpec& s);

// The backbone fields of `b` (the top-level config or transformer_layer_config): Qwen3 layers,
// or Gemma 4 layers for a Gemma4DSparkModel (whose config is a copy of the target's
// text_config, model_type gemma4_text).
void parse_backbone(const HfConfig& b, DraftSpec& s) {
  const bool gemma_arch = s.hf_arch == kGemmaDraftArch;
  const std::string type = b.get_string("model_type", gemma_arch ? "gemma4_text" : "qwen3");
  const bool gemma_type = type == "gemma4_text" || type == "gemma4";
  FULGUR_CHECK(type == "qwen3" || gemma_type, b.source(), ": field 'model_type' is '", type,
               "'; fulgur's block drafters have Qwen3 layers ('qwen3') or, for ", kGemmaDraftArch,
               ", Gemma 4 layers ('gemma4_text')");
  FULGUR_CHECK(gemma_type == gemma_arch, b.source(), ": field 'model_type' is '", type, "' but architectures says ",
               s.hf_arch, gemma_arch ? " (Gemma 4 layers: expected 'gemma4_text')"
                                     : " (only Gemma4DSparkModel drafts have Gemma 4 layers; contradictory)");
  if (gemma_type) {
    parse_gemma4_backbone(b, s);
  } else {
    parse_qwen3_backbone(b, s);
  }
}

// The fields both backbones read alike: widths, depth, vocabulary, norm eps, context.
void parse_common_dims(const HfConfig& b, DraftSpec& s) {
  s.n_embd = b.get_int("hidden_size");
  s.n_layer = b.get_int("num_hidden_layers");
  s.n_head = b.get_int("num_attention_heads");
  s.n_ff = b.get_int("intermediate_size");
  s.n_vocab = b.get_int("vocab_size");
  s.rms_eps = b.get_float("rms_norm_eps");
  s.n_ctx = b.get_int("max_position_embeddings", 4096);
  FULGUR_CHECK(!b.get_bool("attention_bias", false), b.source(),
               ": field 'attention_bias' is true; drafters with attention biases are not supported");
  FULGUR_CHECK(!b.has("rope_scaling"), b.source(),
               ": field 'rope_scaling' is set; scaled RoPE is not supported for drafters");
}

void check_dims(const HfConfig& b, const DraftSpec& s) {
  FULGUR_CHECK(s.n_embd > 0 && s.n_layer > 0 && s.n_head > 0 && s.n_head_kv > 0 && s.n_ff > 0 &&
                   s.n_vocab > 0,
               b.source(), ": hidden_size ", s.n_embd, ", num_hidden_layers ", s.n_layer,
               ", num_attention_heads ", s.n_head, ", key/value heads ", s.n_head_kv,
               ", intermediate_size ", s.n_ff, " and vocab_size ", s.n_vocab,
               " must all be positive");
  FULGUR_CHECK(s.n_head % s.n_head_kv == 0, b.source(), ": num_attention_heads ", s.n_head,
               " is not a multiple of the ", s.n_head_kv, " key/value heads");
  FULGUR_CHECK(s.head_dim > 0 && s.head_dim % 2 == 0, b.source(), ": head dim ", s.head_dim,
               " must be positive and even (RoPE)");
}

// layer_types, when given: one entry per draft layer, every one full attention.
void check_full_attention(const HfConfig& b, const DraftSpec& s) {
  if (!b.has("layer_types")) return;
  const std::vector<std::string> types = b.get_string_array("layer_types");
  FULGUR_CHECK(static_cast<int64_t>(types.size()) == s.n_layer, b.source(),
               ": field 'layer_types' has ", types.size(), " entries, expected ", s.n_layer,
               " (num_hidden_layers)");
  for (size_t i = 0; i < types.size(); ++i) {
    FULGUR_CHECK(types[i] == "full_attention", b.source(), ": layer_types[", i, "] is '",
                 types[i], "'; only 'full_attention' draft layers are supported");
  }
}

// Gemma 4 layers (DeepSpec's Gemma4DSparkModel; vLLM gemma4_dspark.py, llama.cpp's converter):
// every draft layer is a full-attention layer with the target's full-layer geometry.
void parse_gemma4_backbone(const HfConfig& b, DraftSpec& s) {
  s.backbone = DraftBackbone::kGemma4;
  parse_common_dims(b, s);
  s.k_eq_v = b.get_bool("attention_k_eq_v", false);
  const int64_t kv = b.get_int("num_key_value_heads", s.n_head);
  s.n_head_kv = s.k_eq_v ? b.get_int("num_global_key_value_heads", kv) : kv;
  s.head_dim = b.has("global_head_dim") ? b.get_int("global_head_dim") : b.get_int("head_dim");
  check_dims(b, s);
  check_full_attention(b, s);
  const std::string act = b.has("hidden_activation") ? b.get_string("hidden_activation")
                                                     : b.get_string("hidden_act", "gelu_pytorch_tanh");
  FULGUR_CHECK(act == "gelu_pytorch_tanh", b.source(), ": hidden activation is '", act,
               "'; Gemma 4 draft layers are GELU-tanh GEGLU ('gelu_pytorch_tanh')");
  s.hidden_act = act;
  FULGUR_CHECK(!b.get_bool("enable_moe_block", false), b.source(),
               ": field 'enable_moe_block' is true; MoE draft layers are not supported");
  FULGUR_CHECK(!b.has("final_logit_softcapping") || b.get_float("final_logit_softcapping") == 0.0, b.source(),
               ": field 'final_logit_softcapping' is set; soft-capped DSpark logits are not supported (as in "
               "llama.cpp's Gemma4DSparkModel converter)");
  // RoPE of the full layers: rope_parameters.full_attention (or rope_parameters itself);
  // without one, Gemma4TextConfig's default (proportional, a quarter of the head, base 1e6).
  std::string type = "proportional";
  double fraction = 0.25;
  s.rope_theta = b.get_float("rope_theta", 1000000.0);
  if (b.has("rope_parameters")) {
    const HfConfig all = b.get_object("rope_parameters");
    const HfConfig rp = all.has("full_attention") ? all.get_object("full_attention") : all;
    type = rp.get_string("rope_type", "default");
    fraction = rp.get_float("partial_rotary_factor", type == "proportional" ? 0.25 : 1.0);
    s.rope_theta = rp.get_float("rope_theta", s.rope_theta);
    FULGUR_CHECK(type == "default" || type == "proportional", rp.source(), ": field 'rope_type' is '", type,
                 "'; Gemma 4 drafts take 'default' or 'proportional' RoPE");
  }
  const double rotated = static_cast<double>(s.head_dim) * fraction;
  s.rope_pairs = static_cast<int64_t>(rotated / 2.0);
  FULGUR_CHECK(fraction > 0.0 && fraction <= 1.0 && s.rope_pairs > 0 &&
                   rotated == 2.0 * static_cast<double>(s.rope_pairs),
               b.source(), ": partial_rotary_factor ", fraction, " of head dim ", s.head_dim,
               " must rotate a positive, even number of dims");
}

// The Qwen3-style backbone.
void parse_qwen3_backbone(const HfConfig& b, DraftSpec& s) {
  parse_common_dims(b, s);
  s.n_head_kv = b.get_int("num_key_value_heads", s.n_head);
  if (b.has("head_dim")) {
    s.head_dim = b.get_int("head_dim");
  } else {
    FULGUR_CHECK(s.n_head > 0 && s.n_embd % s.n_head == 0, b.source(), ": no 'head_dim' and hidden_size ", s.n_embd,
                 " is not divisible by num_attention_heads ", s.n_head);
    s.head_dim = s.n_embd / s.n_head;
  }
  check_dims(b, s);
  s.rope_pairs = s.head_dim / 2;
  if (b.has("rope_theta")) {
    s.rope_theta = b.get_float("rope_theta");
  } else {
    FULGUR_CHECK(b.has("rope_parameters"), b.source(),
                 ": field 'rope_theta' is missing (and there is no 'rope_parameters')");
    const HfConfig rp = b.get_object("rope_parameters");
    s.rope_theta = rp.get_float("rope_theta");
    const std::string type = rp.get_string("rope_type", "default");
    FULGUR_CHECK(type == "default", rp.source(), ": field 'rope_parameters.rope_type' is '", type,
                 "'; only plain RoPE ('default') is supported for drafters");
  }
  s.hidden_act = b.get_string("hidden_act", "silu");
  FULGUR_CHECK(s.hidden_act == "silu" || s.hidden_act == "gelu_pytorch_tanh", b.source(), ": field 'hidden_act' is '",
               s.hidden_act, "', expected 'silu' or 'gelu_pytorch_tanh'");
  FULGUR_CHECK(!b.get_bool("use_sliding_window", false), b.source(),
               ": field 'use_sliding_window' is true; sliding-window drafters are not supported");
  check_full_attention(b, s);
}

// Checkpoint target_layer_ids (outputs of decoder layer l; -1 = the embedding output) to layer
// INPUT indices, the GGUF convention: input of layer l + 1 = output of layer l.
std::vector<int32_t> layer_inputs_from_ids(const std::vector<int64_t>& ids, int64_t offset,
                                           const std::string& field, int64_t n_target_layers) {
  FULGUR_CHECK(!ids.empty(), field, " is empty");
  std::vector<int32_t> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t input = ids[i] + offset;
    FULGUR_CHECK(input >= 0, field, "[", i, "] = ", ids[i], " is below the smallest valid id ",
                 -offset);
    FULGUR_CHECK(i == 0 || ids[i] > ids[i - 1], field, " must be strictly increasing (entry ", i,
                 " = ", ids[i], " follows ", ids[i - 1], ")");
    FULGUR_CHECK(n_target_layers <= 0 || input <= n_target_layers, field, "[", i, "] = ", ids[i],
                 " is beyond the target's ", n_target_layers, " layers");
    out.push_back(static_cast<int32_t>(input));
  }
  return out;
}

// z-lab's default tap selection when target_layer_ids is absent (spec §1.2).
std::vector<int64_t> zlab_default_ids(int64_t n_target, int64_t n_draft) {
  if (n_draft == 1) return {n_target / 2};
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n_draft; ++i) {
    ids.push_back(static_cast<int64_t>(std::llround(
        1.0 + static_cast<double>(i) * static_cast<double>(n_target - 4) /
                  static_cast<double>(n_draft - 1))));
  }
  return ids;
}

// An integer that may sit at the top level and/or in a nested object; both present and
// different is a contradiction.
std::optional<int64_t> int_in_either(const HfConfig& top, const HfConfig* nested,
                                     const std::string& key) {
  std::optional<int64_t> a, b;
  if (top.has(key)) a = top.get_int(key);
  if (nested != nullptr && nested->has(key)) b = nested->get_int(key);
  if (a && b) {
    FULGUR_CHECK(*a == *b, top.source(), ": field '", key, "' is ", *a, " but 'dflash_config.",
                 key, "' is ", *b, " (contradictory)");
  }
  return a ? a : b;
}

void parse_markov(const HfConfig& c, DraftSpec& s, bool rank_required) {
  s.markov_rank = rank_required ? c.get_int("markov_rank") : c.get_int("markov_rank", 0);
  FULGUR_CHECK(s.markov_rank >= 0, c.source(), ": field 'markov_rank' is ", s.markov_rank,
               ", expected >= 0");
  if (s.markov_rank > 0) {
    s.markov_type = c.get_string("markov_head_type");
    FULGUR_CHECK(s.markov_type == "vanilla" || s.markov_type == "gated" || s.markov_type == "rnn",
                 c.source(), ": field 'markov_head_type' is '", s.markov_type,
                 "', expected vanilla, gated or rnn");
  }
  s.confidence = c.get_bool("enable_confidence_head", false);
  if (s.confidence) {
    s.conf_with_markov = c.get_bool("confidence_head_with_markov");
    FULGUR_CHECK(!s.conf_with_markov || s.markov_rank > 0, c.source(),
                 ": 'confidence_head_with_markov' is true but there is no Markov head "
                 "(markov_rank 0)");
  }
}

void parse_deepspec(const HfConfig& cfg, DraftSpec& s) {
  parse_backbone(cfg, s);
  s.block_size = cfg.get_int("block_size");
  s.mask_token = cfg.get_int("mask_token_id");
  const int64_t n_target = cfg.get_int("num_target_layers", 0);
  s.target_layers = layer_inputs_from_ids(cfg.get_int_array("target_layer_ids"), 1,
                                          cfg.source() + ": field 'target_layer_ids'", n_target);
  parse_markov(cfg, s, false);
  s.sample_from_anchor = cfg.get_bool("sample_from_anchor", true);  // DeepSpec: anchor-first
}

void parse_zlab(const HfConfig& cfg, DraftSpec& s) {
  parse_backbone(cfg, s);
  FULGUR_CHECK(cfg.has("dflash_config"), cfg.source(), ": field 'dflash_config' is missing (",
               s.hf_arch, " keeps mask_token_id and target_layer_ids there)");
  const HfConfig dc = cfg.get_object("dflash_config");
  const std::optional<int64_t> block = int_in_either(cfg, &dc, "block_size");
  FULGUR_CHECK(block.has_value(), cfg.source(),
               ": field 'block_size' is missing (looked at the top level and in dflash_config)");
  s.block_size = *block;
  const std::optional<int64_t> mask = int_in_either(cfg, &dc, "mask_token_id");
  FULGUR_CHECK(mask.has_value(), cfg.source(), ": field 'dflash_config.mask_token_id' is missing");
  s.mask_token = *mask;
  const int64_t n_target = cfg.get_int("num_target_layers", 0);
  std::vector<int64_t> ids;
  if (dc.has("target_layer_ids")) {
    ids = dc.get_int_array("target_layer_ids");
  } else {
    FULGUR_CHECK(n_target > 0, cfg.source(),
                 ": neither 'dflash_config.target_layer_ids' nor 'num_target_layers' is given");
    ids = zlab_default_ids(n_target, s.n_layer);
  }
  s.target_layers = layer_inputs_from_ids(ids, 1, cfg.source() + ": field 'dflash_config.target_layer_ids'",
                                          n_target);
  s.causal = dc.get_bool("causal", false);
  FULGUR_CHECK(!dc.get_bool("use_swa", false), dc.source(),
               ": field 'dflash_config.use_swa' is true; sliding-window drafters are not supported");
  s.sample_from_anchor = false;  // z-lab: slot 0 is the bonus anchor, slots 1..B-1 predict
  if (s.format == DraftFormat::kDflash2) {
    s.dflash2 = true;
    s.conv_kernel = dc.get_int("conv_kernel_size");
    s.conv_group = dc.get_int("conv_group_size");
    s.selector_rank = dc.get_int("selector_rank");
    s.selector_top_k = dc.get_int("selector_top_k");
    FULGUR_CHECK(s.conv_kernel > 0 && s.conv_group > 0 && s.selector_rank > 0 &&
                     s.selector_top_k > 0,
                 dc.source(), ": conv_kernel_size, conv_group_size, selector_rank and "
                 "selector_top_k must be positive");
    FULGUR_CHECK(s.n_embd % s.conv_group == 0, dc.source(), ": hidden_size ", s.n_embd,
                 " is not a multiple of dflash_config.conv_group_size ", s.conv_group);
    s.logit_scale = dc.get_float("output_multiplier", 1.0);
    s.softcap = dc.get_float("final_logit_softcapping", 0.0);
    FULGUR_CHECK(std::isfinite(s.logit_scale) && s.logit_scale > 0 && std::isfinite(s.softcap) && s.softcap >= 0,
                 dc.source(), ": output_multiplier ", s.logit_scale, " must be positive and final_logit_softcapping ",
                 s.softcap, " >= 0");
  }
}

// speculators' layout when config.json has no sample_from_anchor: what its proposal method's
// speculative_tokens implies (B drafts = anchor-first, B - 1 = 1+N), else 1+N, the layout of
// the released speculators exports.
bool speculators_default_layout(const HfConfig& cfg, int64_t block_size) {
  if (cfg.has("speculators_config")) {
    const HfConfig sc = cfg.get_object("speculators_config");
    if (sc.has("proposal_methods")) {
      for (const HfConfig& pm : sc.get_object_array("proposal_methods")) {
        if (!pm.has("speculative_tokens")) continue;
        const int64_t n = pm.get_int("speculative_tokens");
        if (n == block_size) return true;
        if (n == block_size - 1) return false;
      }
    }
  }
  log_warn(cfg.source(), ": no 'sample_from_anchor'; reading it as 1+N (bonus anchor), the layout "
           "of speculators' released exports");
  return false;
}

void parse_speculators(const HfConfig& cfg, DraftSpec& s) {
  // Gemma4DSparkModel names both kinds (DeepSpec trains DFlash with the DSpark class).
  const bool gemma = s.hf_arch == kGemmaDraftArch;
  const std::string type = cfg.has("speculators_model_type")
                               ? cfg.get_string("speculators_model_type")
                               : (s.hf_arch.starts_with("DSpark") || gemma ? "dspark" : "dflash");
  FULGUR_CHECK(type == "dspark" || type == "dflash", cfg.source(),
               ": field 'speculators_model_type' is '", type, "', expected dspark or dflash");
  const bool dspark = type == "dspark";
  FULGUR_CHECK(gemma || s.hf_arch.starts_with(dspark ? "DSpark" : "DFlash"), cfg.source(),
               ": field 'speculators_model_type' is '", type, "' but architectures says ",
               s.hf_arch, " (contradictory)");
  const HfConfig b = cfg.get_object("transformer_layer_config");
  parse_backbone(b, s);
  s.n_vocab_draft = cfg.get_int("draft_vocab_size", s.n_vocab);
  FULGUR_CHECK(s.n_vocab_draft > 0 && s.n_vocab_draft <= s.n_vocab, cfg.source(),
               ": field 'draft_vocab_size' is ", s.n_vocab_draft, ", expected 1..", s.n_vocab,
               " (transformer_layer_config.vocab_size)");
  s.block_size = cfg.get_int("block_size");
  s.mask_token = cfg.get_int("mask_token_id");
  // HF hidden-states index = layer input index already (z-lab id + 1).
  s.target_layers = layer_inputs_from_ids(cfg.get_int_array("aux_hidden_state_layer_ids"), 0,
                                          cfg.source() + ": field 'aux_hidden_state_layer_ids'", 0);
  if (cfg.has("target_hidden_size")) {
    const int64_t th = cfg.get_int("target_hidden_size");
    FULGUR_CHECK(th == s.n_embd, cfg.source(), ": field 'target_hidden_size' is ", th,
                 " but the draft's hidden_size is ", s.n_embd,
                 "; drafters share the target's width (only equal widths are supported)");
  }
  s.sample_from_anchor = cfg.has("sample_from_anchor")
                             ? cfg.get_bool("sample_from_anchor")
                             : speculators_default_layout(cfg, s.block_size);
  if (dspark) parse_markov(cfg, s, !gemma || cfg.has("markov_rank"));
  FULGUR_CHECK(!cfg.get_bool("sliding_window_non_causal", false) || !b.has("sliding_window"),
               cfg.source(), ": sliding-window drafters are not supported");
  if (cfg.has("speculators_config")) {
    const HfConfig sc = cfg.get_object("speculators_config");
    if (sc.has("proposal_methods")) {
      const int64_t max_drafts = s.sample_from_anchor ? s.block_size : s.block_size - 1;
      for (const HfConfig& pm : sc.get_object_array("proposal_methods")) {
        if (!pm.has("speculative_tokens")) continue;
        const int64_t n = pm.get_int("speculative_tokens");
        FULGUR_CHECK(n <= max_drafts, pm.source(), ": speculative_tokens ", n,
                     " exceeds the ", max_drafts, " drafts a block of ", s.block_size, " gives (",
                     s.sample_from_anchor ? "anchor-first" : "1+N", " layout; contradictory)");
      }
    }
  }
}

void parse_specforge(const HfConfig& cfg, DraftSpec& s) {
  parse_backbone(cfg, s);
  FULGUR_CHECK(cfg.has("dflash_config"), cfg.source(), ": field 'dflash_config' is missing (",
               s.hf_arch, " keeps the DSpark head settings there)");
  const HfConfig dc = cfg.get_object("dflash_config");
  const std::string proj = dc.get_string("projector_type", "dspark");
  FULGUR_CHECK(proj == "dspark", dc.source(), ": field 'dflash_config.projector_type' is '", proj,
               "', expected 'dspark'");
  const std::string mode = dc.get_string("attention_mode", "gqa");
  FULGUR_CHECK(mode == "gqa", dc.source(), ": field 'dflash_config.attention_mode' is '", mode,
               "', expected 'gqa'");
  const std::optional<int64_t> block = int_in_either(cfg, &dc, "block_size");
  FULGUR_CHECK(block.has_value(), cfg.source(), ": field 'block_size' is missing");
  s.block_size = *block;
  const std::optional<int64_t> mask = int_in_either(cfg, &dc, "mask_token_id");
  FULGUR_CHECK(mask.has_value(), cfg.source(), ": field 'dflash_config.mask_token_id' is missing");
  s.mask_token = *mask;
  s.target_layers = layer_inputs_from_ids(dc.get_int_array("target_layer_ids"), 1,
                                          cfg.source() + ": field 'dflash_config.target_layer_ids'",
                                          cfg.get_int("num_target_layers", 0));
  parse_markov(dc, s, true);
  // SpecForge exports read the last B-1 slots (1+N) unless the config says otherwise.
  s.sample_from_anchor = dc.has("sample_from_anchor") ? dc.get_bool("sample_from_anchor")
                                                      : cfg.get_bool("sample_from_anchor", false);
}

}  // namespace

std::string DraftSpec::describe() const {
  return cat(hf_arch, " (hidden_size=", n_embd, ", layers=", n_layer, ", block_size=", block_size,
             ", ", sample_from_anchor ? "anchor-first" : "1+N", markov_rank > 0 ? ", markov " : "",
             markov_type, ")");
}

bool is_draft_config(const HfConfig& cfg) {
  const std::string arch = first_arch(cfg);
  for (const FormatEntry& e : kFormats) {
    if (arch == e.hf_arch) return true;
  }
  return false;
}

std::string supported_draft_architectures() {
  std::string out;
  for (const FormatEntry& e : kFormats) out += cat(out.empty() ? "" : ", ", e.hf_arch);
  return out;
}

DraftSpec parse_draft_config(const HfConfig& cfg, const std::set<std::string>& tensor_names) {
  DraftSpec s;
  s.hf_arch = first_arch(cfg);
  bool found = false;
  for (const FormatEntry& e : kFormats) {
    if (s.hf_arch == e.hf_arch) {
      s.format = e.format;
      found = true;
    }
  }
  FULGUR_CHECK(found, cfg.source(), ": '", s.hf_arch, "' is not a block-drafter architecture (",
               supported_draft_architectures(), ")");
  // speculators names its exports DSparkDraftModel / DFlashDraftModel too (RedHatAI's
  // "*speculator.dspark"), with the backbone nested under transformer_layer_config instead of
  // SpecForge's / z-lab's flat fields and dflash_config.
  if (cfg.has("speculators_model_type") ||
      (cfg.has("transformer_layer_config") && !cfg.has("dflash_config"))) {
    s.format = DraftFormat::kSpeculators;
  }
  switch (s.format) {
    case DraftFormat::kDeepSpec: parse_deepspec(cfg, s); break;
    case DraftFormat::kZlabDflash:
    case DraftFormat::kDflash2: parse_zlab(cfg, s); break;
    case DraftFormat::kSpeculators: parse_speculators(cfg, s); break;
    case DraftFormat::kSpecForge: parse_specforge(cfg, s); break;
  }
  if (s.n_vocab_draft == 0) s.n_vocab_draft = s.n_vocab;
  s.target_hidden = s.n_embd;
  FULGUR_CHECK(s.block_size >= (s.sample_from_anchor ? 1 : 2), cfg.source(), ": block_size ",
               s.block_size, " gives no draft slot in the ",
               s.sample_from_anchor ? "anchor-first" : "1+N", " layout");
  FULGUR_CHECK(s.mask_token >= 0 && s.mask_token < s.n_vocab, cfg.source(), ": mask_token_id ",
               s.mask_token, " is outside the vocabulary [0, ", s.n_vocab, ")");
  if (tensor_names.count("logit_head.markov_head.markov_w1.weight") ||
      tensor_names.count("logit_head.confidence_head.proj.weight")) {
    s.head_prefix = "logit_head.";
  }
  const bool has_d2t = tensor_names.count("d2t") > 0;
  FULGUR_CHECK(has_d2t == (s.n_vocab_draft != s.n_vocab), cfg.source(), ": draft vocabulary ",
               s.n_vocab_draft, " vs target vocabulary ", s.n_vocab, " but the checkpoint ",
               has_d2t ? "has" : "has no", " 'd2t' tensor (contradictory)");
  return s;
}

std::vector<std::string> llamacpp_differences(const DraftSpec& s) {
  std::vector<std::string> out;
  const std::string who = s.describe();
  if (s.markov_rank == 0 && s.sample_from_anchor) {
    out.push_back(cat(who, " is an anchor-first plain ", s.dflash2 ? "DFlash2" : "DFlash",
                      " draft: llama.cpp reads plain DFlash and DFlash2 drafts as 1+N whatever "
                      "dflash.sample_from_anchor says, so it would read every prediction one slot "
                      "late (still lossless, acceptance near zero); fulgur reads it as written"));
  }
  if (s.markov_type == "gated" || s.markov_type == "rnn") {
    out.push_back(cat(who, " has a ", s.markov_type, " Markov head: llama.cpp knows only the "
                      "vanilla head and refuses the extra ",
                      s.markov_type == "gated" ? "markov_gate" : "markov_joint",
                      " tensors; the file loads in fulgur only"));
  }
  if (s.markov_rank > 0 && !s.confidence) {
    out.push_back(cat(who, " has a Markov head but no confidence head: llama.cpp (and fulgur) "
                      "refuse --spec-p-min > 0 with it"));
  }
  if (s.markov_rank > 0 && s.confidence && !s.conf_with_markov) {
    out.push_back(cat(who, "'s confidence head reads the hidden state only (conf_proj {",
                      s.n_embd, ", 1}); llama.cpp's reads [hidden ; W1[prev]] ({",
                      s.n_embd + s.markov_rank, ", 1}) and refuses this one"));
  }
  if (s.dflash2 && s.n_embd < s.selector_top_k * (s.selector_top_k + 1)) {
    out.push_back(cat(who, ": llama.cpp packs a selector row of top_k * (top_k + 1) = ",
                      s.selector_top_k * (s.selector_top_k + 1), " values into one hidden row of ",
                      s.n_embd, " and refuses this draft"));
  }
  return out;
}

}  // namespace fulgur
