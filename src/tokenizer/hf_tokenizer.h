// Hugging Face tokenizer.json / tokenizer_config.json -> Vocab, for the converter (which writes
// the Vocab as tokenizer.* GGUF keys) and for running straight from an HF folder.
//
// The pre-tokenizer is recognised from its definition (the Split regexes and ByteLevel settings),
// not from a list of model names, and mapped to llama.cpp's tokenizer.ggml.pre name.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/vocab.h"

namespace fulgur {

// The GGUF tokenizer model a SentencePiece-style tokenizer.json (BPE with byte_fallback, spaces
// as U+2581) is written as: "llama", as llama.cpp converts Llama 2, Mistral 7B and Gemma 3, or
// "gemma4", as it converts Gemma 4 (tokenizer/hf_sentencepiece.h says what each writes). A
// byte-level tokenizer.json is always "gpt2".
enum class SpmGgufModel { kLlama, kGemma4 };

// Builds a Vocab from tokenizer.json text: model.vocab, model.merges ("a b" strings or
// ["a", "b"] pairs), added_tokens (special or "<|...|>" -> CONTROL, others USER_DEFINED, as
// llama.cpp's converter types them), the pre-tokenizer name, ignore_merges, the NFC normalizer,
// and BOS/EOS from a TemplateProcessing post-processor; for a SentencePiece-style file, what
// finish_sentencepiece_vocab (hf_sentencepiece.h) makes of it for `spm_as`. Ids missing from both
// are filled with "[PAD<id>]" UNUSED tokens. Throws fulgur::Error naming the field on anything
// malformed or unsupported (`source` names the file in messages).
Vocab vocab_from_hf_json(std::string_view json_text, std::string_view source = "tokenizer.json",
                         SpmGgufModel spm_as = SpmGgufModel::kLlama);
Vocab load_hf_tokenizer(const std::string& path, SpmGgufModel spm_as = SpmGgufModel::kLlama);

struct HfTokenizerConfig {
  std::optional<std::string> bos_token;  // token texts; plain strings or AddedToken objects
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<std::string> unk_token;
  std::optional<bool> add_bos_token;  // absent: keep what tokenizer.json implied
  std::optional<bool> add_eos_token;
  std::optional<bool> add_prefix_space;  // SentencePiece: llama.cpp's converter copies it
  std::string chat_template;  // "" when absent; the "default" one of a named list
  std::map<std::string, std::string> named_chat_templates;  // other entries of a named list
  std::string tokenizer_class;
};

HfTokenizerConfig hf_config_from_json(std::string_view json_text,
                                      std::string_view source = "tokenizer_config.json");
HfTokenizerConfig load_hf_tokenizer_config(const std::string& path);

// Resolves the config's token texts to ids in `vocab` (bos/eos/pad/unk) and copies the add_*
// flags that are present (add_prefix_space only into a SentencePiece-style vocab, as the
// converter's Llama path; a gemma4 vocab keeps add_bos true, as llama.cpp forces it). A named
// token missing from the vocab is an Error.
void apply_hf_config(Vocab& vocab, const HfTokenizerConfig& config);

// Grows the vocab to n tokens with "[PAD<id>]" UNUSED entries (score -1000 when the vocab has
// scores; the model's embedding table is often larger than the tokenizer). Error if the vocab
// already has more than n.
void pad_vocab(Vocab& vocab, size_t n);

}  // namespace fulgur
