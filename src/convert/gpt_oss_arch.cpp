#include "convert/gpt_oss_arch.h"

#include "convert/dense_arch.h"
#include "core/error.h"

namespace fulgur {
namespace {

// One strided part per expert j: the GGUF rows of expert j's matrix read from a source whose
// expert slices are `expert_size` elements apart (convert_plan.h TensorPart::strided).
TensorPlan strided_experts(const std::string& hf_name, const std::vector<int64_t>& hf_shape, std::string gguf_name,
                           std::vector<int64_t> shape, int64_t first, int64_t row_stride, int64_t col_stride) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  const int64_t N = hf_shape[0], rows = shape[1];
  const int64_t expert_size = hf_shape[1] * hf_shape[2];
  tp.shape = std::move(shape);
  for (int64_t j = 0; j < N; ++j) {
    tp.parts.push_back({.hf_name = hf_name, .hf_shape = hf_shape, .row0 = 0, .n_rows = rows,
                        .offset = j * expert_size + first, .row_stride = row_stride, .col_stride = col_stride});
  }
  return tp;
}

// Every other value of each row of a bias [N, 2F] (gate: first 0, up: first 1) as {F, N}.
TensorPlan interleaved_bias(const std::string& hf_name, int64_t N, int64_t F, std::string gguf_name, int64_t first) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  tp.shape = {F, N};
  tp.parts.push_back({.hf_name = hf_name, .hf_shape = {N, 2 * F}, .row0 = 0, .n_rows = N, .offset = first,
                      .row_stride = 2 * F, .col_stride = 2});
  return tp;
}

// Whether the checkpoint holds expert weight `name` in the released MXFP4 form (name_blocks /
// name_scales; a float `name` beside them is refused by check_plan).
bool released_mxfp4(const std::set<std::string>& names, const std::string& name) {
  return names.count(name + "_blocks") > 0 || names.count(name + "_scales") > 0;
}

// Rows first, first + 2, ... of each expert's [2F, E] slice of a released gate_up_proj
// [N, 2F, E] as {E, F, N}: one strided part per expert, each row a run of E values.
TensorPlan interleaved_rows(const std::string& hf_name, int64_t N, int64_t F, int64_t E, std::string gguf_name,
                            int64_t first) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  tp.shape = {E, F, N};
  for (int64_t j = 0; j < N; ++j) {
    tp.parts.push_back({.hf_name = hf_name, .hf_shape = {N, 2 * F, E}, .row0 = 0, .n_rows = F,
                        .offset = (j * 2 * F + first) * E, .row_stride = 2 * E, .col_stride = 1});
  }
  return tp;
}

}  // namespace

ArchPlan plan_gpt_oss(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w) {
  const std::string a = "gpt-oss";
  w.set_string("general.architecture", a);
  const DecoderDims d = read_decoder_dims(cfg);
  const int64_t E = d.n_embd, L = d.n_layer, F = d.n_ff;
  const int64_t q_width = d.n_head * d.head_dim, kv_width = d.n_head_kv * d.head_dim;
  const int64_t N = cfg.get_dim("num_local_experts");
  const int64_t used = cfg.get_dim("num_experts_per_tok", cfg.get_dim("experts_per_token", 4));
  FULGUR_CHECK(used <= N, cfg.source(), ": num_experts_per_tok ", used, " is more than num_local_experts ", N);
  const int64_t window = cfg.get_dim("sliding_window");
  FULGUR_CHECK(!cfg.get_bool("tie_word_embeddings", false), cfg.source(),
               ": tie_word_embeddings is true; llama.cpp's gpt-oss needs its own output head");
  FULGUR_CHECK(cfg.get_bool("attention_bias", true), cfg.source(),
               ": attention_bias is false; llama.cpp's gpt-oss needs the attention output bias");
  FULGUR_CHECK(cfg.get_float("swiglu_limit", 7.0) == 7.0, cfg.source(), ": swiglu_limit ",
               cfg.get_float("swiglu_limit", 7.0), " differs from the 7.0 llama.cpp's gpt-oss hard-codes");
  if (cfg.has("layer_types")) {
    const std::vector<std::string> types = cfg.get_string_array("layer_types");
    FULGUR_CHECK(static_cast<int64_t>(types.size()) == L, cfg.source(), ": layer_types has ", types.size(),
                 " entries for ", L, " layers");
    for (int64_t l = 0; l < L; ++l) {
      const char* expected = l % 2 == 0 ? "sliding_attention" : "full_attention";
      FULGUR_CHECK(types[static_cast<size_t>(l)] == expected, cfg.source(), ": layer_types[", l, "] is '",
                   types[static_cast<size_t>(l)], "'; llama.cpp's gpt-oss alternates sliding and full layers "
                   "from layer 0, so expected '", expected, "'");
    }
  }
  write_decoder_keys(a, d, L, w);
  write_rope_scaling(cfg, a, w);
  w.set_u32(a + ".expert_count", static_cast<uint32_t>(N));
  w.set_u32(a + ".expert_used_count", static_cast<uint32_t>(used));
  w.set_u32(a + ".expert_feed_forward_length", static_cast<uint32_t>(F));
  w.set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(window));

  ArchPlan plan;
  plan.gguf_arch = a;
  plan.n_layer = L;
  plan.n_vocab = d.n_vocab;
  plan.what = cat(cfg.source(), " (hidden_size ", E, ", ", L, " layers, ", N, " experts)");
  plan.tensors.push_back(same_bytes("model.embed_tokens.weight", "token_embd.weight", {d.n_vocab, E}));
  for (int64_t l = 0; l < L; ++l) {
    const std::string hf = cat("model.layers.", l, "."), g = cat("blk.", l, ".");
    std::vector<TensorPlan>& t = plan.tensors;
    t.push_back(same_bytes(hf + "input_layernorm.weight", g + "attn_norm.weight", {E}));
    t.push_back(same_bytes(hf + "self_attn.q_proj.weight", g + "attn_q.weight", {q_width, E}));
    t.push_back(same_bytes(hf + "self_attn.q_proj.bias", g + "attn_q.bias", {q_width}));
    t.push_back(same_bytes(hf + "self_attn.k_proj.weight", g + "attn_k.weight", {kv_width, E}));
    t.push_back(same_bytes(hf + "self_attn.k_proj.bias", g + "attn_k.bias", {kv_width}));
    t.push_back(same_bytes(hf + "self_attn.v_proj.weight", g + "attn_v.weight", {kv_width, E}));
    t.push_back(same_bytes(hf + "self_attn.v_proj.bias", g + "attn_v.bias", {kv_width}));
    t.push_back(same_bytes(hf + "self_attn.o_proj.weight", g + "attn_output.weight", {E, q_width}));
    t.push_back(same_bytes(hf + "self_attn.o_proj.bias", g + "attn_output.bias", {E}));
    t.push_back(same_bytes(hf + "self_attn.sinks", g + "attn_sinks.weight", {d.n_head}));
    t.push_back(same_bytes(hf + "post_attention_layernorm.weight", g + "post_attention_norm.weight", {E}));
    t.push_back(same_bytes(hf + "mlp.router.weight", g + "ffn_gate_inp.weight", {N, E}));
    t.push_back(same_bytes(hf + "mlp.router.bias", g + "ffn_gate_inp.bias", {N}));
    const std::string ex = hf + "mlp.experts.";
    if (!released_mxfp4(names, ex + "gate_up_proj")) {
      // gate_up_proj [N, E, 2F]: row f of gate is column 2f (up: 2f + 1) over the E input rows.
      t.push_back(strided_experts(ex + "gate_up_proj", {N, E, 2 * F}, g + "ffn_gate_exps.weight", {E, F, N}, 0, 2, 2 * F));
      t.push_back(interleaved_bias(ex + "gate_up_proj_bias", N, F, g + "ffn_gate_exps.bias", 0));
      t.push_back(strided_experts(ex + "gate_up_proj", {N, E, 2 * F}, g + "ffn_up_exps.weight", {E, F, N}, 1, 2, 2 * F));
    } else {
      // The released form [N, 2F, E] (out, in): gate is rows 2f, up rows 2f + 1.
      t.push_back(interleaved_rows(ex + "gate_up_proj", N, F, E, g + "ffn_gate_exps.weight", 0));
      t.push_back(interleaved_bias(ex + "gate_up_proj_bias", N, F, g + "ffn_gate_exps.bias", 0));
      t.push_back(interleaved_rows(ex + "gate_up_proj", N, F, E, g + "ffn_up_exps.weight", 1));
    }
    t.push_back(interleaved_bias(ex + "gate_up_proj_bias", N, F, g + "ffn_up_exps.bias", 1));
    if (!released_mxfp4(names, ex + "down_proj")) {
      // down_proj [N, F, E]: row e is column e over the F rows.
      t.push_back(strided_experts(ex + "down_proj", {N, F, E}, g + "ffn_down_exps.weight", {F, E, N}, 0, 1, E));
    } else {
      t.push_back(same_bytes(ex + "down_proj", g + "ffn_down_exps.weight", {N, E, F}));  // released: [N, E, F]
    }
    t.push_back(same_bytes(hf + "mlp.experts.down_proj_bias", g + "ffn_down_exps.bias", {N, E}));
  }
  plan.tensors.push_back(same_bytes("model.norm.weight", "output_norm.weight", {E}));
  plan.tensors.push_back(same_bytes("lm_head.weight", "output.weight", {d.n_vocab, E}));
  assign_quant_roles(plan);
  return plan;
}

}  // namespace fulgur
