// Vocab <-> tokenizer.* GGUF keys (archs-gguf.md §2.5, §5.1), written the way llama.cpp's
// converter writes a byte-level BPE ("gpt2"), SentencePiece ("llama") or Gemma 4 ("gemma4")
// vocabulary, so files from either side load in the other.
#pragma once

#include <string>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab.h"

namespace fulgur {

// Sets tokenizer.ggml.{model, pre (not for gemma4), tokens, scores (when present), token_type,
// merges (not for llama)}, the special token ids that are present (bos/eos/eot/padding/unknown/
// mask as u32), tokenizer.fulgur.normalizer (fulgur's record of the normalizer; gpt2 only),
// add_space_prefix (when set), add_bos_token (always) and add_eos_token (only when true, as
// llama.cpp's converter omits it for Qwen), and tokenizer.chat_template when `chat_template` is
// not empty. Validates the vocab first (model name, sizes, ids in range) and throws
// fulgur::Error naming the field.
void write_vocab(GgufWriter& w, const Vocab& v, const std::string& chat_template = "");

// Reads the keys back, with llama.cpp's defaults for absent ones (llama: bos 1, eos 2, unk 0,
// add_bos true; gemma4: add_bos always true). ignore_merges is derived from the pre-tokenizer
// name as llama.cpp does (GGUF does not store it); the normalizer follows
// tokenizer/normalizer_rule.h (fulgur's key, else NFC for known NFC vocabularies such as
// Qwen2/Qwen3's, else none). Throws fulgur::Error naming the file and key when the file has no
// tokenizer, the model is not gpt2/llama/gemma4, a gpt2 pre-tokenizer is unknown, a llama
// vocabulary has no scores, a gpt2/gemma4 one no merges, or an array has the wrong type or
// length.
Vocab read_vocab(const GgufReader& r);

}  // namespace fulgur
