#include "convert/gpt_oss_arch.h"

#include "convert/dense_arch.h"
#include "core/error.h"

namespace fulgur {
namespace {

// A tensor of ggml shape `shape` with no checkpoint source (see the header).
TensorPlan sourceless(std::string gguf_name, std::vector<int64_t> shape) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  tp.shape = std::move(shape);
  return tp;
}

}  // namespace

ArchPlan plan_gpt_oss(const HfConfig& cfg, GgufWriter& w) {
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
    t.push_back(sourceless(g + "ffn_gate_exps.weight", {E, F, N}));
    t.push_back(sourceless(g + "ffn_gate_exps.bias", {F, N}));
    t.push_back(sourceless(g + "ffn_up_exps.weight", {E, F, N}));
    t.push_back(sourceless(g + "ffn_up_exps.bias", {F, N}));
    t.push_back(sourceless(g + "ffn_down_exps.weight", {F, E, N}));
    t.push_back(same_bytes(hf + "mlp.experts.down_proj_bias", g + "ffn_down_exps.bias", {N, E}));
  }
  plan.tensors.push_back(same_bytes("model.norm.weight", "output_norm.weight", {E}));
  plan.tensors.push_back(same_bytes("lm_head.weight", "output.weight", {d.n_vocab, E}));
  assign_quant_roles(plan);
  return plan;
}

}  // namespace fulgur
