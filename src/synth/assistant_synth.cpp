#include "synth/assistant_synth.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "convert/draft_target.h"
#include "convert/hf_config.h"
#include "convert/safetensors_writer.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "synth/synth.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

constexpr const char* kArch = "gemma4-assistant";

// Every value of a target tensor as f32, row by row ([rows][ne0]).
std::vector<float> read_rows(const GgufTensorInfo& t) {
  const int64_t cols = t.ne[0], rows = t.n_elements() / cols;
  const uint64_t row_bytes = GgufWriter::tensor_nbytes(t.type, {cols});
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, t.data + r * row_bytes, out.data() + r * cols, cols);
  return out;
}

// A per-layer key of the target (a scalar for every layer, or an array) at layer l.
int64_t layer_key(const GgufReader& g, const std::string& key, int64_t l) {
  const GgufValue* v = g.find(key);
  FULGUR_CHECK(v != nullptr, g.what(key), " is missing");
  if (!v->is_array()) return g.get_i64(key);
  const std::vector<int64_t> all = v->get_int_array<int64_t>(g.what(key));
  FULGUR_CHECK(l < static_cast<int64_t>(all.size()), g.what(key), " has no entry for layer ", l);
  return all[static_cast<size_t>(l)];
}

// What an assistant layer takes from the target layer it reads.
struct SourceLayer {
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
};

// transformers' name of a GGUF tensor of the assistant ("" for rope_freqs, which the
// converter computes).
std::string hf_name(const std::string& gguf) {
  static const std::pair<const char*, const char*> kTop[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"nextn.pre_projection.weight", "pre_projection.weight"},
      {"nextn.post_projection.weight", "post_projection.weight"},
      {"rope_freqs.weight", ""}};
  static const std::pair<const char*, const char*> kLayer[] = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
      {"layer_output_scale.weight", "layer_scalar"}};
  for (const auto& [g, h] : kTop) {
    if (gguf == g) return h;
  }
  const size_t dot = gguf.find('.', 4);  // after "blk.N"
  for (const auto& [g, h] : kLayer) {
    if (gguf.starts_with("blk.") && gguf.substr(dot + 1) == g) {
      return cat("model.layers.", gguf.substr(4, dot - 4), ".", h);
    }
  }
  fail("synth gemma4-assistant: no Hugging Face name for ", gguf);
}

class Writer {
 public:
  Writer(GgufWriter& w, const AssistantSynthOptions& o) : w_(w), o_(o) {}

  SafetensorsWriter& hf() { return hf_; }

  // A tensor of shape {ne0, ne1...} with the synthetic value distribution, or `values` when given.
  void add(const std::string& name, const std::vector<int64_t>& shape,
           std::vector<float> values = {}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const int64_t cols = shape[0];
    if (values.empty()) {
      values.resize(static_cast<size_t>(n));
      synth_rows(name, cols, synth_value_dist(kArch, name, cols), o_.seed, 0, n / cols,
                 values.data());
    }
    FULGUR_CHECK(static_cast<int64_t>(values.size()) == n, "synth gemma4-assistant: ", name,
                 " has ", values.size(), " values for ", n, " elements");
    const bool matrix = shape.size() == 2 && cols % dtype_info(o_.type).block_size == 0;
    const DType type = matrix ? o_.type : DType::kF32;
    const uint64_t row_bytes = GgufWriter::tensor_nbytes(type, {cols});
    std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * (n / cols)));
    for (int64_t r = 0; r < n / cols; ++r)
      quantize_row(type, values.data() + r * cols, bytes.data() + r * row_bytes, cols);
    w_.add_tensor(name, type, shape, std::move(bytes));
    if (!o_.hf_dir.empty()) {
      const std::string h = hf_name(name);
      if (!h.empty()) hf_.add_f32(h, std::vector<int64_t>(shape.rbegin(), shape.rend()), values);
    }
  }

 private:
  GgufWriter& w_;
  const AssistantSynthOptions& o_;
  SafetensorsWriter hf_;
};

// Gemma4AssistantForCausalLM's config.json for these weights, the geometry read from the target
// as the GGUF's keys are.
nlohmann::json hf_config(const GgufReader& tg, int64_t E, int64_t Et, int64_t F, int64_t V,
                         const std::vector<bool>& sliding, int64_t n_head, int64_t kv_swa, int64_t kv_full) {
  const auto f = [&](const char* key) { return static_cast<double>(tg.get_f32(std::string("gemma4.") + key)); };
  const auto i = [&](const char* key) { return tg.get_i64(std::string("gemma4.") + key); };
  const int64_t head_swa = i("attention.key_length_swa"), head_full = i("attention.key_length");
  const GgufTensorInfo& rf = tg.tensor("rope_freqs.weight");
  int64_t pairs = 0;
  for (const float x : read_rows(rf)) pairs += x == 1.0f ? 1 : 0;
  nlohmann::json c;
  c["architectures"] = {"Gemma4AssistantForCausalLM"};
  c["model_type"] = "gemma4_assistant";
  c["backbone_hidden_size"] = Et;
  c["hidden_size"] = E;
  c["intermediate_size"] = F;
  c["num_hidden_layers"] = sliding.size();
  c["num_attention_heads"] = n_head;
  c["num_key_value_heads"] = kv_swa;
  c["num_global_key_value_heads"] = kv_full;
  c["attention_k_eq_v"] = true;
  c["num_kv_shared_layers"] = sliding.size();
  c["head_dim"] = head_swa;
  c["global_head_dim"] = head_full;
  c["vocab_size"] = V;
  c["rms_norm_eps"] = f("attention.layer_norm_rms_epsilon");
  c["max_position_embeddings"] = i("context_length");
  c["sliding_window"] = i("attention.sliding_window");
  c["hidden_activation"] = "gelu_pytorch_tanh";
  c["tie_word_embeddings"] = true;
  c["final_logit_softcapping"] = tg.has("gemma4.final_logit_softcapping") ? nlohmann::json(f("final_logit_softcapping"))
                                                                          : nlohmann::json(nullptr);
  std::vector<std::string> types;
  for (const bool s : sliding) types.push_back(s ? "sliding_attention" : "full_attention");
  c["layer_types"] = types;
  c["rope_parameters"] = {
      {"full_attention",
       {{"rope_type", "proportional"},
        {"partial_rotary_factor", 2.0 * static_cast<double>(pairs) / static_cast<double>(head_full)},
        {"rope_theta", f("rope.freq_base")}}},
      {"sliding_attention",
       {{"rope_type", "default"},
        {"partial_rotary_factor", static_cast<double>(i("rope.dimension_count_swa")) / static_cast<double>(head_swa)},
        {"rope_theta", f("rope.freq_base_swa")}}}};
  return c;
}

}  // namespace

void synth_gemma4_assistant(const AssistantSynthOptions& o) {
  FULGUR_CHECK(!o.target.empty() && !o.out.empty(),
               "synth --arch gemma4-assistant needs --target MODEL.gguf and -o");
  FULGUR_CHECK(can_quantize(o.type), "synth: cannot write weights of type ", dtype_name(o.type));
  FULGUR_CHECK(o.hf_dir.empty() || o.type == DType::kF32,
               "synth gemma4-assistant --hf: the checkpoint holds f32 weights; write the GGUF as f32 too");
  const GgufReader tg(o.target);
  FULGUR_CHECK(tg.get_string("general.architecture", "") == "gemma4",
               "synth --arch gemma4-assistant: --target ", tg.where(), " is a '",
               tg.get_string("general.architecture", ""), "' model, not gemma4");
  const int64_t Et = tg.get_i64("gemma4.embedding_length"),
                n_target = tg.get_i64("gemma4.block_count");
  const int64_t V = tg.tensor("token_embd.weight").ne[1],
                N = static_cast<int64_t>(o.sliding.size());
  const int64_t E = o.n_embd > 0 ? o.n_embd : o.echo ? 2 * Et : Et / 2;
  const int64_t F = o.n_ff > 0 ? o.n_ff : 2 * E;
  FULGUR_CHECK(N > 0, "synth gemma4-assistant: no layers");
  FULGUR_CHECK(E != Et, "synth gemma4-assistant: the width ", E,
               " must differ from the target's (llama.cpp "
               "tells the target's width by embedding_length_out != embedding_length)");
  FULGUR_CHECK(!o.echo || E == 2 * Et,
               "synth gemma4-assistant: an echo assistant is twice the target's width (", 2 * Et,
               "), not ", E);
  const std::vector<bool> target_swa =
      tg.get_array<bool>("gemma4.attention.sliding_window_pattern");
  // The target layers llama.cpp's assistants read: n - 2 (sliding) and n - 1 (full).
  const auto source = [&](bool sliding) {
    const int64_t l = n_target - (sliding ? 2 : 1);
    FULGUR_CHECK(l >= 0 && l < static_cast<int64_t>(target_swa.size()) &&
                     target_swa[static_cast<size_t>(l)] == sliding,
                 "synth gemma4-assistant: ", tg.where(), "'s layer ", l, " is not a ",
                 sliding ? "sliding" : "full", " layer");
    return SourceLayer{.n_head = layer_key(tg, "gemma4.attention.head_count", l),
                       .n_head_kv = layer_key(tg, "gemma4.attention.head_count_kv", l),
                       .head_dim = tg.get_i64(sliding ? "gemma4.attention.key_length_swa"
                                                      : "gemma4.attention.key_length")};
  };

  GgufWriter w;
  const std::string a = std::string(kArch) + ".";
  w.set_string("general.architecture", kArch);
  w.set_string("general.name",
               cat("fulgur-synth-gemma4-assistant", o.echo ? "-echo" : "", "-seed", o.seed));
  w.set_u32("general.quantization_version", 2);
  // The target's shared keys, as the converter writes them for the assistant (Gemma4Model's).
  for (const char* key :
       {"context_length", "attention.layer_norm_rms_epsilon", "attention.key_length",
        "attention.value_length", "attention.key_length_swa", "attention.value_length_swa",
        "attention.sliding_window", "rope.freq_base", "rope.freq_base_swa", "rope.dimension_count",
        "rope.dimension_count_swa", "final_logit_softcapping"}) {
    if (const GgufValue* v = tg.find(std::string("gemma4.") + key)) w.set(a + key, *v);
  }
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(E));
  w.set_u32(a + "embedding_length_out", static_cast<uint32_t>(Et));
  w.set_u32(a + "block_count", static_cast<uint32_t>(N));
  w.set_u32(a + "nextn_predict_layers", static_cast<uint32_t>(N));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(F));
  std::vector<int32_t> heads, kv_heads;
  std::vector<bool> pattern;
  for (const bool sliding : o.sliding) {
    const SourceLayer s = source(sliding);
    heads.push_back(static_cast<int32_t>(s.n_head));
    kv_heads.push_back(static_cast<int32_t>(s.n_head_kv));
    pattern.push_back(sliding);
  }
  w.set_array(a + "attention.head_count", heads);
  w.set_array(a + "attention.head_count_kv", kv_heads);
  w.set_array(a + "attention.sliding_window_pattern", pattern);
  DraftTarget(o.target).write_vocab_into(w, -1);

  Writer add(w, o);
  const GgufTensorInfo* head = tg.find_tensor("output.weight");
  if (head == nullptr) head = &tg.tensor("token_embd.weight");
  if (o.echo) {
    // token_embd [V][E] = [target head | 0]: logits = head · (the first Et of the normed row).
    const std::vector<float> th = read_rows(*head);
    std::vector<float> embd(static_cast<size_t>(V * E), 0.0f);
    for (int64_t v = 0; v < V; ++v) std::copy_n(th.data() + v * Et, Et, embd.data() + v * E);
    add.add("token_embd.weight", {E, V}, std::move(embd));
  } else {
    add.add("token_embd.weight", {E, V});
  }
  // echo: a gain of 1 everywhere, so the normed row keeps h's direction.
  add.add("output_norm.weight", {E},
          o.echo ? std::vector<float>(static_cast<size_t>(E), 1.0f) : std::vector<float>{});
  if (const GgufTensorInfo* rf = tg.find_tensor("rope_freqs.weight"))
    add.add("rope_freqs.weight", rf->shape(), read_rows(*rf));
  std::vector<float> pre, post;  // echo: [E][2Et] passes h to the first Et; [Et][E] takes it back
  if (o.echo) {
    pre.assign(static_cast<size_t>(E * 2 * Et), 0.0f);
    post.assign(static_cast<size_t>(Et * E), 0.0f);
    for (int64_t i = 0; i < Et; ++i) {
      pre[static_cast<size_t>(i * 2 * Et + Et + i)] = 1.0f;
      post[static_cast<size_t>(i * E + i)] = 1.0f;
    }
  }
  add.add("nextn.pre_projection.weight", {2 * Et, E}, std::move(pre));
  add.add("nextn.post_projection.weight", {E, Et}, std::move(post));
  for (int64_t l = 0; l < N; ++l) {
    const SourceLayer s = source(o.sliding[static_cast<size_t>(l)]);
    const int64_t Q = s.n_head * s.head_dim;
    const std::string p = cat("blk.", l, ".");
    const auto zeros = [&](int64_t n) {
      return o.echo ? std::vector<float>(static_cast<size_t>(n), 0.0f) : std::vector<float>{};
    };
    add.add(p + "attn_norm.weight", {E});
    add.add(p + "attn_q.weight", {E, Q});
    add.add(p + "attn_q_norm.weight", {s.head_dim});
    add.add(p + "attn_output.weight", {Q, E}, zeros(Q * E));
    add.add(p + "post_attention_norm.weight", {E});
    add.add(p + "ffn_norm.weight", {E});
    add.add(p + "ffn_gate.weight", {E, F});
    add.add(p + "ffn_up.weight", {E, F});
    add.add(p + "ffn_down.weight", {F, E}, zeros(F * E));
    add.add(p + "post_ffw_norm.weight", {E});
    add.add(p + "layer_output_scale.weight", {1},
            o.echo ? std::vector<float>{1.0f} : std::vector<float>{});
  }
  w.write(o.out);
  if (!o.hf_dir.empty()) {
    const SourceLayer swa = source(true), full = source(false);
    FULGUR_CHECK(swa.n_head == full.n_head, "synth gemma4-assistant --hf: the target's sliding and full layers have ",
                 swa.n_head, " and ", full.n_head, " heads; a Hugging Face config has one num_attention_heads");
    std::error_code ec;
    std::filesystem::create_directories(o.hf_dir, ec);
    FULGUR_CHECK(!ec, "synth: cannot create '", o.hf_dir, "': ", ec.message());
    add.hf().write((std::filesystem::path(o.hf_dir) / "model.safetensors").string());
    write_json_file((std::filesystem::path(o.hf_dir) / "config.json").string(),
                    hf_config(tg, E, Et, F, V, o.sliding, swa.n_head, swa.n_head_kv, full.n_head_kv));
  }
}

}  // namespace fulgur
