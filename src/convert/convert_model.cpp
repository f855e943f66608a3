#include "convert/convert_model.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <vector>

#include "convert/convert_plan.h"
#include "convert/dense_arch.h"
#include "convert/draft_config.h"
#include "convert/draft_convert.h"
#include "convert/draft_target.h"
#include "convert/gdn_arch.h"
#include "convert/gemma4_arch.h"
#include "convert/gpt_oss_arch.h"
#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "convert/nemotron_arch.h"
#include "convert/nvfp4_checkpoint.h"
#include "convert/progress.h"
#include "convert/quant_policy.h"
#include "convert/safetensors.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_writer.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

using PlanFn = ArchPlan (*)(const HfConfig& cfg, const std::set<std::string>& names, MtpMode mtp,
                           GgufWriter& w);

struct ArchEntry {
  const char* hf_arch;     // config.json architectures[0]
  const char* model_type;  // config.json model_type (used when architectures is absent)
  PlanFn plan;             // sets general.architecture and the {arch}.* keys
  bool supports_mtp;       // can export the checkpoint's MTP block (--mtp)
};

template <DenseArch kArch>
ArchPlan plan_dense(const HfConfig& c, const std::set<std::string>& names, MtpMode, GgufWriter& w) {
  w.set_string("general.architecture", dense_arch_name(kArch));
  return plan_dense_decoder(kArch, c, names, w);
}
ArchPlan plan_nemotron(const HfConfig& c, const std::set<std::string>& names, MtpMode mtp, GgufWriter& w) {
  return plan_nemotron_h(c, names, mtp, w);
}
ArchPlan plan_gemma(const HfConfig& c, const std::set<std::string>& names, MtpMode, GgufWriter& w) {
  return plan_gemma4(c, names, w);
}
ArchPlan plan_assistant(const HfConfig& c, const std::set<std::string>& names, MtpMode, GgufWriter& w) {
  return plan_gemma4_assistant(c, names, w);
}
ArchPlan plan_oss(const HfConfig& c, const std::set<std::string>& names, MtpMode, GgufWriter& w) {
  return plan_gpt_oss(c, names, w);
}
template <GdnArch kArch>
ArchPlan plan_gdn(const HfConfig& c, const std::set<std::string>& names, MtpMode mtp, GgufWriter& w) {
  w.set_string("general.architecture", gdn_arch_name(kArch));
  return plan_gdn_hybrid(kArch, c, names, mtp, w);
}

// The dispatch point for targets; block drafters (convert/draft_config.h) are recognised first
// and take their vocabulary from ConvertOptions::target.
// The Qwen3.5 / Qwen3-Next classes are the ones llama.cpp's converter registers
// (conversion/qwen.py at 03173d5e: Qwen3_5TextModel, Qwen3_5MoeTextModel, Qwen3NextModel); the
// model types are transformers' (configuration_qwen3_5.py: "qwen3_5", text part "qwen3_5_text").
// MTP export: the Qwen3.5 classes, as llama.cpp's; Qwen3-Next too, although llama.cpp's
// converter still drops its mtp.* tensors ("ignore MTP layers for now"): its qwen3next loader
// and MTP graph take the same block (checked with the npm build, tests/llama). NemotronH as
// llama.cpp's converter (conversion/nemotron.py), the Puzzle class not (its head is dropped).
constexpr ArchEntry kArchs[] = {
    {"Qwen3ForCausalLM", "qwen3", plan_dense<DenseArch::kQwen3>, false},
    {"Qwen2ForCausalLM", "qwen2", plan_dense<DenseArch::kQwen2>, false},
    {"LlamaForCausalLM", "llama", plan_dense<DenseArch::kLlama>, false},
    {"Qwen3MoeForCausalLM", "qwen3_moe", plan_dense<DenseArch::kQwen3Moe>, false},
    {"NemotronHForCausalLM", "nemotron_h", plan_nemotron, true},
    {"NemotronHPuzzleForCausalLM", "nemotron_h_puzzle", plan_nemotron, false},
    {"Qwen3_5ForConditionalGeneration", "qwen3_5", plan_gdn<GdnArch::kQwen35>, true},
    {"Qwen3_5ForCausalLM", "qwen3_5_text", plan_gdn<GdnArch::kQwen35>, true},
    {"Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe", plan_gdn<GdnArch::kQwen35Moe>, true},
    {"Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", plan_gdn<GdnArch::kQwen35Moe>, true},
    {"Qwen3NextForCausalLM", "qwen3_next", plan_gdn<GdnArch::kQwen3Next>, true},
    // transformers' classes and model types (configuration_gemma4.py), as llama.cpp's converter
    // registers them (conversion/gemma.py Gemma4Model).
    {"Gemma4ForConditionalGeneration", "gemma4", plan_gemma, false},
    {"Gemma4ForCausalLM", "gemma4_text", plan_gemma, false},
    // A drafter, but converted as llama.cpp's Gemma4AssistantModel (a Gemma4Model) converts it.
    {"Gemma4AssistantForCausalLM", "gemma4_assistant", plan_assistant, false},
    {"GptOssForCausalLM", "gpt_oss", plan_oss, false},
};

const ArchEntry& detect_arch(const HfConfig& cfg) {
  if (cfg.has("architectures")) {
    const std::vector<std::string> names = cfg.get_string_array("architectures");
    FULGUR_CHECK(!names.empty(), cfg.source(), ": field 'architectures' is empty");
    for (const ArchEntry& e : kArchs) {
      if (names[0] == e.hf_arch) return e;
    }
    fail(cfg.source(), ": unsupported architecture '", names[0],
         "' (supported: ", supported_hf_architectures(), ")");
  }
  FULGUR_CHECK(cfg.has("model_type"), cfg.source(),
               ": has neither 'architectures' nor 'model_type'; cannot tell the architecture");
  const std::string type = cfg.get_string("model_type");
  for (const ArchEntry& e : kArchs) {
    if (type == e.model_type) return e;
  }
  fail(cfg.source(), ": unsupported model_type '", type,
       "' (supported architectures: ", supported_hf_architectures(), ")");
}

std::string mtp_architectures() {
  std::string out;
  for (const ArchEntry& e : kArchs) {
    if (e.supports_mtp) out += cat(out.empty() ? "" : ", ", e.hf_arch);
  }
  return out;
}

std::string model_name(const std::string& in_dir) {
  fs::path p = fs::path(in_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

std::string supported_hf_architectures() {
  std::string out;
  for (const ArchEntry& e : kArchs) out += cat(out.empty() ? "" : ", ", e.hf_arch);
  return out + ", " + supported_draft_architectures();
}

ArchPlan plan_hf_model(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w,
                       MtpMode mtp) {
  const ArchEntry& arch = detect_arch(cfg);
  FULGUR_CHECK(mtp == MtpMode::kAuto || arch.supports_mtp, mtp == MtpMode::kInclude ? "--mtp: " : "--no-mtp: ",
               arch.hf_arch, " has no MTP block fulgur can export or leave out (supported by ", mtp_architectures(), ")");
  ArchPlan plan = arch.plan(cfg, names, mtp, w);
  assign_quant_roles(plan);
  return plan;
}

void convert_hf_to_gguf(const ConvertOptions& options) {
  FULGUR_CHECK(is_convert_type(options.type), "convert: output type ", dtype_name(options.type),
               " is not supported (use f32, f16, bf16, q8_0, q4_0, q4_k or q6_k)");
  FULGUR_CHECK(!options.out_path.empty(), "convert: no output path given");
  const fs::path dir(options.in_dir);
  FULGUR_CHECK(fs::is_directory(dir), "convert: '", options.in_dir, "' is not a directory");
  const HfConfig cfg = HfConfig::load(options.in_dir);
  if (is_eagle3_config(cfg)) return convert_eagle3_to_gguf(options, cfg);  // convert/draft_convert.h
  if (is_draft_config(cfg)) return convert_draft_to_gguf(options, cfg);  // convert/draft_*
  const ArchEntry& arch = detect_arch(cfg);
  const bool assistant = arch.plan == plan_assistant;
  FULGUR_CHECK(options.target.empty() || assistant, "convert: --target is for drafts; ", cfg.source(),
               " describes a target model");
  const CheckpointQuant quant = parse_quantization_config(cfg);
  const Checkpoint ckpt(options.in_dir);
  const std::set<std::string> names = planning_names(ckpt);

  GgufWriter w;
  w.set_string("general.architecture", "");  // first key; the planner sets it
  w.set_string("general.name", model_name(options.in_dir));
  w.set_u32("general.file_type", gguf_file_type(options.type));
  w.set_u32("general.quantization_version", 2);
  const ArchPlan plan = plan_hf_model(cfg, names, w, options.mtp);
  // Every planned tensor must be there with the right shape, and nothing else may be.
  const PlanSources sources = check_plan(plan, ckpt, options.in_dir, arch.hf_arch, quant);

  // A SentencePiece-style tokenizer.json goes in as llama.cpp's converter for the arch writes
  // it: `gemma4` for Gemma 4, `llama` for the others.
  // An assistant converted with --target takes the target's vocabulary, as the other drafts do.
  if (!options.target.empty()) {
    const DraftTarget target(options.target);
    FULGUR_CHECK(target.n_vocab() == plan.n_vocab, "convert: ", plan.what, " has ", plan.n_vocab,
                 " tokens, the target ", options.target, " ", target.n_vocab());
    target.write_vocab_into(w, -1);
  } else {
    write_loaded_vocab(w, load_hf_vocab(dir, cfg, plan.n_vocab,
                                        plan.gguf_arch.starts_with("gemma4") ? SpmGgufModel::kGemma4
                                                                             : SpmGgufModel::kLlama));
  }

  ThreadPool pool(options.threads);
  Progress progress;
  progress.on = options.progress;
  progress.n_tensors = plan.tensors.size();
  // MXFP4 weights (gpt-oss's experts) stay MXFP4 under a float --type, whose values they
  // convert to without loss, as llama.cpp's converter keeps them; a quantized --type asks for
  // its own encoding, so they are dequantized and quantized to it.
  const bool keep_mxfp4 = options.type == DType::kF32 || options.type == DType::kF16 || options.type == DType::kBF16;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const DType type = checkpoint_tensor_type(tp, sources[i], choose_tensor_type(options.type, tp.role, tp.shape),
                                              /*keep_nvfp4=*/true, keep_mxfp4);
    const uint64_t nbytes = GgufWriter::tensor_nbytes(type, tp.shape);
    progress.total += nbytes;
    add_checkpoint_tensor(w, tp, sources[i], type,
                          [&progress, nbytes] { progress.tensor_done(nbytes); }, &pool);
  }
  try {
    w.write(options.out_path);
  } catch (...) {
    progress.abandon();
    throw;
  }
}

}  // namespace fulgur
