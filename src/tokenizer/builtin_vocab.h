// A small byte-level BPE vocabulary that ships inside fulgur, for synthetic (random-weight) test
// models when the real Qwen3 tokenizer.json is not at hand, and the writer of Hugging Face
// tokenizer files for any byte-level BPE Vocab (used when fulgur exports HF checkpoints).
#pragma once

#include <string>

#include "tokenizer/vocab.h"

namespace fulgur {

// Ids 0..255: the single bytes (id == byte value, in bytes_to_unicode form); then one token per
// merge, learned by a deterministic BPE run over a short embedded English + code text (most
// frequent pair first, ties to the lexicographically smaller pair, stop at kBuiltinMaxMerges or
// when no pair occurs twice); then the CONTROL tokens <|endoftext|>, <|im_start|>, <|im_end|>.
// pre = "qwen2", eos = pad = <|endoftext|>, no BOS. Same result on every call and platform.
inline constexpr int kBuiltinMaxMerges = 320;
Vocab builtin_byte_vocab();

// A minimal ChatML template matching the builtin vocabulary's special tokens.
std::string builtin_chat_template();

// A Hugging Face tokenizer.json for a byte-level BPE vocab: model BPE (vocab = NORMAL, BYTE and
// UNKNOWN tokens, merges as "left right"), added_tokens (CONTROL as special, USER_DEFINED as
// not special; "[PAD<id>]" UNUSED fillers are left out since the reader recreates them), the
// pre-tokenizer's Split regexes + ByteLevel(use_regex=false) (gpt2: ByteLevel(use_regex=true)),
// the NFC normalizer when the vocab has it, ByteLevel decoder, and a TemplateProcessing
// post-processor only when add_bos/add_eos is set. vocab_from_hf_json() of the result, followed
// by apply_hf_config() of vocab_to_hf_tokenizer_config_json(), gives back the same Vocab except:
// trailing fillers are gone (HF pads from config.json vocab_size; pad_vocab restores them),
// pre-tokenizer aliases come back as their first name (llama3 -> llama-bpe), eot_id / mask_id
// are not carried, and a USER_DEFINED token spelt "<|...|>" comes back CONTROL. Throws
// fulgur::Error for a model other than gpt2, token texts that repeat, or an unknown pre.
std::string vocab_to_hf_json(const Vocab& v);

// tokenizer_config.json: bos/eos/pad/unk token texts (null when absent), add_bos_token,
// add_eos_token, added_tokens_decoder, chat_template (when not empty), tokenizer_class
// (Qwen2Tokenizer for the qwen2 pre-tokenizer, else PreTrainedTokenizerFast).
std::string vocab_to_hf_tokenizer_config_json(const Vocab& v, const std::string& chat_template);

}  // namespace fulgur
