// Vocab <-> tokenizer.* GGUF keys (archs-gguf.md §2.5, §5.1), written the way llama.cpp's
// converter writes a byte-level BPE vocabulary, so files from either side load in the other.
#pragma once

#include <string>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab.h"

namespace fulgur {

// Sets tokenizer.ggml.{model, pre, tokens, token_type, merges}, the special token ids that are
// present (bos/eos/eot/padding/unknown/mask as u32), tokenizer.fulgur.normalizer (fulgur's
// record of the normalizer), add_bos_token (always) and add_eos_token (only when true, as
// llama.cpp's converter omits it for Qwen), and tokenizer.chat_template when
// `chat_template` is not empty. Validates the vocab first (sizes, ids in range) and throws
// fulgur::Error naming the field.
void write_vocab(GgufWriter& w, const Vocab& v, const std::string& chat_template = "");

// Reads the keys back. ignore_merges is derived from the pre-tokenizer name as llama.cpp does
// (GGUF does not store it); the normalizer follows tokenizer/normalizer_rule.h (fulgur's key,
// else NFC for known NFC vocabularies such as Qwen2/Qwen3's, else none). Throws
// fulgur::Error naming the file and key when the file has no tokenizer, the model is not
// "gpt2", the pre-tokenizer is unknown, or an array has the wrong type or length.
Vocab read_vocab(const GgufReader& r);

}  // namespace fulgur
