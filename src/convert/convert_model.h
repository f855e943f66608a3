// Hugging Face checkpoint -> GGUF, as llama.cpp's convert_hf_to_gguf.py does for the supported
// architectures (Qwen3ForCausalLM -> qwen3, Qwen2ForCausalLM -> qwen2, LlamaForCausalLM ->
// llama, Qwen3MoeForCausalLM -> qwen3moe, NemotronHForCausalLM / NemotronHPuzzleForCausalLM ->
// nemotron_h or nemotron_h_moe, Qwen3_5(Moe)ForConditionalGeneration / Qwen3_5(Moe)ForCausalLM
// -> qwen35 / qwen35moe, Qwen3NextForCausalLM -> qwen3next; convert/dense_arch.h,
// convert/nemotron_arch.h, convert/gdn_arch.h; block drafters -> dflash, convert/draft_*), from
// float checkpoints, compressed-tensors NVFP4 ones (convert/nvfp4_checkpoint.h: NVFP4 linears
// stay NVFP4 whatever --type says) and OpenAI's MXFP4 ones (convert/mxfp4_checkpoint.h: MXFP4
// experts stay MXFP4 under --type f32 / f16 / bf16, and are requantized under a quantized one). Everything is validated before the output is opened: config
// fields, every expected tensor present with the shape the config implies, no unexpected tensor,
// a supported source dtype, and the tokenizer (tokenizer.json + tokenizer_config.json) with a recognised
// pre-tokenizer. Tensors are then converted one at a time (bounded memory) into a temporary file
// that is renamed to out_path only on success: a failed conversion leaves nothing behind.
// Per-tensor types follow convert/quant_policy.h.
#pragma once

#include <set>
#include <string>

#include "convert/convert_plan.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

namespace fulgur {

struct ConvertOptions {
  std::string in_dir;    // HF model folder: config.json, *.safetensors, tokenizer files
  std::string out_path;  // .gguf to write
  DType type = DType::kF16;  // F32, F16, BF16, Q8_0, Q4_0, Q4_K (q4_k recipe), Q6_K
  bool progress = true;      // progress bar on stderr
  int threads = 0;           // threads converting rows; 0 = one per physical core
  // The checkpoint's MTP block (Qwen3.5: mtp.*) as extra blocks after the trunk; kInclude on an
  // architecture without MTP export is an error.
  MtpMode mtp = MtpMode::kAuto;
  // Drafts only: the target (a GGUF file or an HF folder, like llama.cpp's --target-model-dir)
  // whose vocabulary is written into the draft, so the file stands alone (llama.cpp refuses a
  // model without tokenizer.ggml.*). Empty: no vocabulary, with a warning.
  std::string target;
};

// Throws fulgur::Error (naming the file, field or tensor) on any problem; no output file then.
void convert_hf_to_gguf(const ConvertOptions& options);

// The plan for config.json's architecture (convert_plan.h), quantization roles included: sets
// general.architecture (in place, if the caller put a placeholder first) and the {arch}.* keys
// on `w`. `names` are the checkpoint's tensor names (an empty set plans the default layout;
// "lm_head.weight" in it plans an untied head; `mtp` decides the MTP block). Used by
// convert_hf_to_gguf and `fulgur synth`.
ArchPlan plan_hf_model(const HfConfig& cfg, const std::set<std::string>& names, GgufWriter& w,
                       MtpMode mtp = MtpMode::kAuto);

// The HF architecture names convert_hf_to_gguf accepts, comma separated (for messages / help).
std::string supported_hf_architectures();

}  // namespace fulgur
