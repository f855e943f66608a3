#include "convert/draft_convert.h"

#include <algorithm>
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

enum class Kind { kFloat, kFloatF32, kD2t };  // requested type / always F32 / I64 id map

struct DraftTensor {
  std::string hf_name, gguf_name;
  std::vector<int64_t> hf_shape;  // HF order
  TensorRole role = TensorRole::kWeight;
  Kind kind = Kind::kFloat;
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
    p.tensors.push_back({std::move(hf), std::move(gg), std::move(shape), role, kind});
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
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string h = cat("layers.", l, "."), b = cat("blk.", l, ".");
    add(h + "input_layernorm.weight", b + "attn_norm.weight", {E});
    add(h + "self_attn.q_proj.weight", b + "attn_q.weight", {qw, E});
    add(h + "self_attn.k_proj.weight", b + "attn_k.weight", {kvw, E});
    add(h + "self_attn.v_proj.weight", b + "attn_v.weight", {kvw, E});
    add(h + "self_attn.o_proj.weight", b + "attn_output.weight", {E, qw});
    add(h + "self_attn.q_norm.weight", b + "attn_q_norm.weight", {Dh});
    add(h + "self_attn.k_norm.weight", b + "attn_k_norm.weight", {Dh});
    add(h + "post_attention_layernorm.weight", b + "ffn_norm.weight", {E});
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
                                    const DraftSpec& s) {
  const SafetensorsTensor* st = ckpt.find(t.hf_name);
  FULGUR_CHECK(st != nullptr, ckpt.dir(), ": missing tensor '", t.hf_name, "' (needed for ",
               t.gguf_name, " by ", s.describe(), ")");
  FULGUR_CHECK(st->shape == t.hf_shape, st->file, ": tensor '", t.hf_name, "' has ",
               st->n_elements(), " values in ", st->shape.size(), " dimensions but ",
               s.describe(), " implies one per draft token (", t.hf_shape[0], ")");
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

void write_keys(const DraftSpec& s, const ConvertOptions& o, GgufWriter& w) {
  fs::path name = fs::path(o.in_dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  w.set_string("general.architecture", g::kArch);
  w.set_string("general.name", name.filename().string());
  w.set_u32("general.file_type", gguf_file_type(o.type));
  w.set_u32("general.quantization_version", 2);
  const std::string a = "dflash.";
  auto u32 = [&](const std::string& key, int64_t v) { w.set_u32(key, static_cast<uint32_t>(v)); };
  u32(a + "context_length", s.n_ctx);
  u32(a + "embedding_length", s.n_embd);
  u32(a + "block_count", s.n_layer);
  u32(a + "feed_forward_length", s.n_ff);
  u32(a + "attention.head_count", s.n_head);
  u32(a + "attention.head_count_kv", s.n_head_kv);
  u32(a + "attention.key_length", s.head_dim);
  u32(a + "attention.value_length", s.head_dim);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_eps));
  w.set_f32(a + "rope.freq_base", static_cast<float>(s.rope_theta));
  u32(a + "vocab_size", s.n_vocab);
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
  }
}

}  // namespace

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

  // The weights are an ordinary tensor plan; d2t (integer offsets) is checked and written apart.
  ArchPlan weights;
  weights.what = spec.describe();
  weights.ignored = plan.ignored;
  const SafetensorsTensor* d2t = nullptr;
  for (const DraftTensor& t : plan.tensors) {
    if (t.kind == Kind::kD2t) {
      d2t = &d2t_tensor(ckpt, t, spec);
      weights.ignored.insert(t.hf_name);
      continue;
    }
    TensorPlan& tp = weights.tensors.emplace_back(same_bytes(t.hf_name, t.gguf_name, t.hf_shape));
    tp.role = t.kind == Kind::kFloatF32 ? TensorRole::kKeepF32 : t.role;
  }
  const PlanSources sources = check_plan(weights, ckpt, options.in_dir, spec.hf_arch, quant);
  for (const std::string& difference : llamacpp_differences(spec)) {
    log_warn("convert: ", difference);
  }
  if (!target) {
    log_warn("convert: no --target: the draft gets no vocabulary, so llama.cpp will not load it "
             "(fulgur uses the target's); pass --target MODEL.gguf or the target's HF folder");
  }

  GgufWriter w;
  write_keys(spec, options, w);
  if (target) target->write_vocab_into(w, spec.mask_token);
  ThreadPool pool(options.threads);
  size_t next = 0;  // index into weights.tensors, in plan order
  for (const DraftTensor& t : plan.tensors) {
    if (t.kind == Kind::kD2t) {
      const std::vector<int64_t> ids = absolute_d2t(*d2t, spec.n_vocab);
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

}  // namespace fulgur
