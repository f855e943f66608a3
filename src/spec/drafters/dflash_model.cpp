#include "spec/drafters/dflash_model.h"

#include <cstring>

#include "core/error.h"
#include "model/hparams.h"
#include "spec/drafters/dflash_gguf.h"

namespace fulgur {
namespace {

namespace g = dflash_gguf;

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += cat(i ? ", " : "", s[i]);
  return out + "}";
}

class Binder {
 public:
  explicit Binder(const GgufReader& gguf) : gguf_(gguf) {}

  bool has(const std::string& name) const { return gguf_.find_tensor(name) != nullptr; }

  // Matrix of ggml shape {cols, rows}; cols/rows < 0 = take from the file.
  kernels::WeightView matrix(const std::string& name, int64_t cols, int64_t rows) const {
    const GgufTensorInfo& t = gguf_.tensor(name);
    FULGUR_CHECK(t.n_dims == 2 && (cols < 0 || t.ne[0] == cols) && (rows < 0 || t.ne[1] == rows),
                 gguf_.where(), ": tensor '", name, "' has shape ", shape_str(t.shape()),
                 ", expected {", cols, ", ", rows, "}");
    FULGUR_CHECK(kernels::matmul_supports(t.type), gguf_.where(), ": tensor '", name,
                 "' has type ", dtype_name(t.type), ", which fulgur cannot multiply");
    kernels::WeightView w;
    w.type = t.type;
    w.data = t.data;
    w.cols = t.ne[0];
    w.rows = t.ne[1];
    w.row_stride = row_bytes(t.type, w.cols);
    const std::string base = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
    if (const GgufTensorInfo* s = gguf_.find_tensor(base + ".scale")) {
      FULGUR_CHECK(s->type == DType::kF32 && s->n_elements() == 1, gguf_.where(), ": tensor '",
                   s->name, "' must be a single f32");
      std::memcpy(&w.scale, s->data, sizeof(float));
    }
    return w;
  }

  // f32 tensor with exactly this shape.
  const float* f32(const std::string& name, const std::vector<int64_t>& shape) const {
    const GgufTensorInfo& t = gguf_.tensor(name);
    FULGUR_CHECK(t.shape() == shape, gguf_.where(), ": tensor '", name, "' has shape ",
                 shape_str(t.shape()), ", expected ", shape_str(shape));
    FULGUR_CHECK(t.type == DType::kF32, gguf_.where(), ": tensor '", name, "' has type ",
                 dtype_name(t.type), ", expected f32");
    return reinterpret_cast<const float*>(t.data);
  }

 private:
  const GgufReader& gguf_;
};

MarkovHead markov_head_from(const std::string& type, const GgufReader& gguf) {
  if (type == "vanilla") return MarkovHead::kVanilla;
  if (type == "gated") return MarkovHead::kGated;
  if (type == "rnn") return MarkovHead::kRnn;
  fail(gguf.what(g::kMarkovHeadType), " is '", type, "', expected vanilla, gated or rnn");
}

DflashHparams read_dflash_hparams(const GgufReader& gguf) {
  const std::string arch = gguf.get_string("general.architecture");
  FULGUR_CHECK(arch == g::kArch, gguf.where(), ": general.architecture is '", arch,
               "', expected 'dflash' (a DFlash / DSpark / DFlash2 drafter)");
  DflashHparams hp;
  const std::string a = "dflash.";
  hp.n_embd = gguf.get_i64(a + "embedding_length");
  hp.n_layer = gguf.get_i64(a + "block_count");
  FULGUR_CHECK(hp.n_embd > 0 && hp.n_layer > 0, gguf.where(), ": embedding_length ", hp.n_embd,
               " and block_count ", hp.n_layer, " must be positive");
  hp.n_head = read_per_layer(gguf, a + "attention.head_count", hp.n_layer, -1);
  hp.n_head_kv = read_per_layer(gguf, a + "attention.head_count_kv", hp.n_layer, -1);
  if (!gguf.has(a + "attention.head_count_kv")) hp.n_head_kv = hp.n_head;
  hp.n_ff = read_per_layer(gguf, a + "feed_forward_length", hp.n_layer, -1);
  hp.head_dim = gguf.get_i64(a + "attention.key_length", hp.n_embd / hp.n_head[0]);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    FULGUR_CHECK(hp.n_head[l] > 0 && hp.n_head_kv[l] > 0 && hp.n_head[l] % hp.n_head_kv[l] == 0 &&
                     hp.n_ff[l] > 0,
                 gguf.where(), ": layer ", l, " has head_count ", hp.n_head[l],
                 ", head_count_kv ", hp.n_head_kv[l], ", feed_forward_length ", hp.n_ff[l]);
  }
  hp.rms_eps = gguf.get_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  hp.rope.freq_base = gguf.get_f32(a + "rope.freq_base", 10000.0f);
  hp.rope.n_rot = gguf.get_i64(a + "rope.dimension_count", hp.head_dim);
  hp.rope.mode = kernels::RopeMode::kNeox;  // Qwen3 layers, HF rotate-half layout
  FULGUR_CHECK(hp.rope.n_rot > 0 && hp.rope.n_rot <= hp.head_dim && hp.rope.n_rot % 2 == 0,
               gguf.where(), ": rope.dimension_count ", hp.rope.n_rot, " must be even and <= ",
               hp.head_dim);
  hp.n_ctx_train = gguf.get_i64(a + "context_length", 4096);
  // llama.cpp defaults block_size to 16 when absent; fulgur requires it (a wrong block size
  // silently changes what the drafter reads out).
  hp.block_size = gguf.get_i64(g::kBlockSize);
  hp.target_layers = gguf.get_int_array<int>(g::kTargetLayers);
  FULGUR_CHECK(!hp.target_layers.empty(), gguf.what(g::kTargetLayers), " is empty");
  hp.target_hidden = gguf.get_i64(g::kTargetHidden, hp.n_embd);
  hp.mask_token = gguf.get_i32(g::kMaskToken);
  hp.sample_from_anchor = gguf.get_bool(g::kSampleFromAnchor, true);
  hp.causal = gguf.get_bool(g::kCausal, false);
  FULGUR_CHECK(hp.block_size > 0, gguf.what(g::kBlockSize), " is ", hp.block_size,
               "; a block needs at least one slot");
  FULGUR_CHECK(hp.max_drafts() >= 1, gguf.what(g::kBlockSize), " is ", hp.block_size,
               ", which gives no draft in the 1+N layout (sample_from_anchor = false)");
  return hp;
}

}  // namespace

const char* dflash_kind_name(DflashKind kind) {
  switch (kind) {
    case DflashKind::kDflash: return "dflash";
    case DflashKind::kDspark: return "dspark";
    case DflashKind::kDflash2: return "dflash2";
  }
  return "?";
}

DflashModel::DflashModel(const std::string& path, const Model& target)
    : gguf_(path), hp_(read_dflash_hparams(gguf_)) {
  const Binder bind(gguf_);
  const Hparams& th = target.hparams();
  const int64_t E = hp_.n_embd, Dh = hp_.head_dim, V = target.n_vocab();
  const std::string who = cat("draft ", gguf_.where(), " and target ", target.gguf().where());
  FULGUR_CHECK(E == th.n_embd, who, ": draft hidden size ", E, " differs from the target's ",
               th.n_embd);
  FULGUR_CHECK(hp_.target_hidden == th.n_embd, who, ": ", g::kTargetHidden, " is ",
               hp_.target_hidden, " but the target's hidden size is ", th.n_embd);
  for (int t : hp_.target_layers) {
    FULGUR_CHECK(t >= 0 && t <= th.n_layer, who, ": ", g::kTargetLayers, " holds ", t,
                 ", beyond the target's ", th.n_layer, " layers (valid inputs 0..", th.n_layer,
                 ")");
  }
  FULGUR_CHECK(hp_.mask_token >= 0 && hp_.mask_token < V, who, ": mask token id ",
               hp_.mask_token, " is outside the target vocabulary [0, ", V, ")");
  hp_.n_vocab = V;

  const int64_t m = static_cast<int64_t>(hp_.target_layers.size());
  w_.fc = bind.matrix(g::kFc, -1, E);
  FULGUR_CHECK(w_.fc.cols == m * th.n_embd, who, ": fc input width ", w_.fc.cols,
               " is not the target width ", th.n_embd, " x ", m, " taps = ", m * th.n_embd);
  w_.enc_norm = bind.f32(g::kEncNorm, {E});
  w_.output_norm = bind.f32(g::kOutputNorm, {E});
  w_.own_embd = bind.has(g::kTokenEmbd);
  w_.token_embd = w_.own_embd ? bind.matrix(g::kTokenEmbd, E, V) : target.weights().token_embd;
  w_.own_output = bind.has(g::kOutput);
  w_.output = w_.own_output ? bind.matrix(g::kOutput, E, -1) : target.weights().output;
  hp_.n_vocab_draft = w_.output.rows;
  if (const GgufTensorInfo* d2t = gguf_.find_tensor(g::kD2t)) {
    FULGUR_CHECK(d2t->type == DType::kI64 && d2t->n_dims == 1 && d2t->ne[0] == hp_.n_vocab_draft,
                 gguf_.where(), ": tensor 'd2t' must be I64 {", hp_.n_vocab_draft,
                 "} (one target id per output row)");
    w_.d2t.resize(static_cast<size_t>(hp_.n_vocab_draft));
    for (int64_t i = 0; i < hp_.n_vocab_draft; ++i) {
      int64_t id = 0;
      std::memcpy(&id, d2t->data + i * 8, 8);
      FULGUR_CHECK(id >= 0 && id < V, who, ": d2t[", i, "] = ", id,
                   " is outside the target vocabulary [0, ", V, ")");
      w_.d2t[static_cast<size_t>(i)] = static_cast<int32_t>(id);
    }
  } else {
    FULGUR_CHECK(hp_.n_vocab_draft == V, who, ": the draft's output has ", hp_.n_vocab_draft,
                 " rows but there is no d2t map to the target's ", V, " tokens");
  }

  w_.layers.resize(hp_.n_layer);
  const bool dflash2 = bind.has(g::kSelHidden);
  if (dflash2) {
    hp_.conv_kernel = gguf_.get_i64(g::kConvKernel);
    hp_.conv_group = gguf_.get_i64(g::kConvGroup);
    hp_.selector_rank = gguf_.get_i64(g::kSelectorRank);
    hp_.selector_top_k = gguf_.get_i64(g::kSelectorTopK);
    FULGUR_CHECK(hp_.conv_kernel > 0 && hp_.conv_group > 0 && E % hp_.conv_group == 0 &&
                     hp_.selector_rank > 0 && hp_.selector_top_k > 0 &&
                     hp_.selector_top_k <= V,
                 gguf_.where(), ": DFlash2 keys conv_kernel_size ", hp_.conv_kernel,
                 ", conv_group_size ", hp_.conv_group, " (must divide ", E,
                 "), selector_rank ", hp_.selector_rank, ", selector_top_k ", hp_.selector_top_k,
                 " are invalid");
    FULGUR_CHECK(w_.d2t.empty(), gguf_.where(), ": DFlash2 needs the full target vocabulary");
  }
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    const std::string p = cat("blk.", l, ".");
    const int64_t qw = hp_.n_head[l] * Dh, kvw = hp_.n_head_kv[l] * Dh, F = hp_.n_ff[l];
    DflashLayer& L = w_.layers[l];
    L.attn_norm = bind.f32(p + "attn_norm.weight", {E});
    L.wq = bind.matrix(p + "attn_q.weight", E, qw);
    L.wk = bind.matrix(p + "attn_k.weight", E, kvw);
    L.wv = bind.matrix(p + "attn_v.weight", E, kvw);
    L.wo = bind.matrix(p + "attn_output.weight", qw, E);
    L.q_norm = bind.f32(p + "attn_q_norm.weight", {Dh});
    L.k_norm = bind.f32(p + "attn_k_norm.weight", {Dh});
    L.ffn_norm = bind.f32(p + "ffn_norm.weight", {E});
    L.gate = bind.matrix(p + "ffn_gate.weight", E, F);
    L.up = bind.matrix(p + "ffn_up.weight", E, F);
    L.down = bind.matrix(p + "ffn_down.weight", F, E);
    if (dflash2) {
      const int64_t K = hp_.conv_kernel, G = E / hp_.conv_group;
      L.attn_conv_base = bind.f32(p + "attn_conv_base", {E, K, 2});
      L.attn_conv_proj = bind.matrix(p + "attn_conv_proj.weight", E, 2 * K * G);
      L.ffn_conv_base = bind.f32(p + "ffn_conv_base", {E, K, 2});
      L.ffn_conv_proj = bind.matrix(p + "ffn_conv_proj.weight", E, 2 * K * G);
    }
  }

  // DSpark heads.
  if (bind.has(g::kMarkovW1)) {
    w_.markov_w1 = bind.matrix(g::kMarkovW1, -1, V);
    hp_.markov_rank = w_.markov_w1.cols;
    const int64_t r = hp_.markov_rank;
    w_.markov_w2 = bind.matrix(g::kMarkovW2, r, hp_.n_vocab_draft);
    hp_.markov = markov_head_from(gguf_.get_string(g::kMarkovHeadType, "vanilla"), gguf_);
    if (hp_.markov == MarkovHead::kGated) {
      w_.markov_gate = bind.matrix(g::kMarkovGate, E + r, r);
      w_.markov_gate_b = bind.f32(g::kMarkovGateBias, {r});
    } else if (hp_.markov == MarkovHead::kRnn) {
      w_.markov_joint = bind.matrix(g::kMarkovJoint, 2 * r + E, 3 * r);
      w_.markov_joint_b = bind.f32(g::kMarkovJointBias, {3 * r});
    }
  } else {
    FULGUR_CHECK(!gguf_.has(g::kMarkovHeadType) && !bind.has(g::kMarkovW2), gguf_.where(),
                 ": has a Markov head type or markov_w2 but no markov_w1");
  }
  if (bind.has(g::kConfProj)) {
    w_.conf_proj = bind.matrix(g::kConfProj, -1, 1);
    hp_.confidence = true;
    hp_.conf_with_markov = w_.conf_proj.cols == E + hp_.markov_rank && hp_.markov_rank > 0;
    FULGUR_CHECK(w_.conf_proj.cols == E || hp_.conf_with_markov, gguf_.where(),
                 ": conf_proj has ", w_.conf_proj.cols, " inputs; expected ", E, " or ",
                 E + hp_.markov_rank, " (hidden + Markov rank)");
    if (bind.has(g::kConfBias)) w_.conf_bias = *bind.f32(g::kConfBias, {1});
  }
  if (dflash2) {
    const int64_t R = hp_.selector_rank;
    w_.sel_pred = bind.matrix(g::kSelPred, R, V);
    w_.sel_succ = bind.matrix(g::kSelSucc, R, V);
    w_.sel_hidden = bind.matrix(g::kSelHidden, E, R);
    FULGUR_CHECK(hp_.markov == MarkovHead::kNone, gguf_.where(),
                 ": a draft cannot have both a Markov head and a DFlash2 selector");
    hp_.kind = DflashKind::kDflash2;
  } else if (hp_.markov != MarkovHead::kNone) {
    hp_.kind = DflashKind::kDspark;
  }
}

}  // namespace fulgur
