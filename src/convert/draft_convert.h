// Block-drafter checkpoint (any format of convert/draft_config.h) -> `dflash` GGUF
// (gguf/dflash_keys.h). Like the dense converter, everything is validated before the
// output is opened (config fields, every expected tensor with the shape the config implies, no
// unexpected tensor, d2t a valid map) and the file appears only on success.
#pragma once

#include "convert/convert_model.h"
#include "convert/hf_config.h"

namespace fulgur {

// `cfg` is the already-loaded config.json of options.in_dir (is_draft_config(cfg) holds).
// No tokenizer is written: a drafter uses its target's vocabulary.
void convert_draft_to_gguf(const ConvertOptions& options, const HfConfig& cfg);

// EAGLE-3 checkpoints -> llama.cpp's `eagle3` GGUF: speculators (`Eagle3Speculator`, the layer
// config under transformer_layer_config, the layer as layers.0.*) and SpecForge
// (`LlamaForCausalLMEagle3`, a flat Llama config, the layer as midlayer.*); d2t offsets become
// absolute I64 ids, t2d is dropped, q/k rows are permuted as llama.cpp's llama converter does.
bool is_eagle3_config(const HfConfig& cfg);
void convert_eagle3_to_gguf(const ConvertOptions& options, const HfConfig& cfg);

}  // namespace fulgur
