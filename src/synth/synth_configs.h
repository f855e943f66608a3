// The Hugging Face config.json of each synthetic model (arch x shape). `fulgur synth` runs the
// converter's plan for it (convert/convert_model.h plan_hf_model), so the GGUF keys and tensors
// of a synthetic model are exactly those `fulgur convert` writes for the same config.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/vocab.h"

namespace fulgur {

// config.json for `arch` (qwen3 | qwen2 | llama | qwen3moe | nemotron_h | nemotron_h_moe |
// qwen35 | qwen35moe | qwen3next | gemma4 | gpt-oss) at `shape` with an embedding of n_vocab rows
// and the vocab's bos/eos ids; `mtp`: one MTP block (mtp_num_hidden_layers, or
// num_nextn_predict_layers for Nemotron-H, = 1; not the Puzzle shape). Throws fulgur::Error
// naming the arch and listing its shapes when the pair is unknown.
nlohmann::json synth_config(const std::string& arch, const std::string& shape, int64_t n_vocab,
                            const Vocab& vocab, bool mtp = false);

// Throws fulgur::Error naming the arch and listing its shapes (or the archs) when unknown, or
// when `mtp` is asked of an arch without an MTP block.
void check_synth_shape(const std::string& arch, const std::string& shape, bool mtp = false);

// "qwen3: tiny, 0.6b, 1.7b, 4b; ...; nemotron_h_moe: tiny, tiny-puzzle, nano-l8" for help texts.
std::string synth_shapes_help();

}  // namespace fulgur
