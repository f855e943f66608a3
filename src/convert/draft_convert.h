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

}  // namespace fulgur
