// The SentencePiece side of reading a Hugging Face tokenizer.json (Llama 2, Mistral 7B, Gemma 3
// and 4): a BPE model with byte_fallback over text whose spaces the normalizer (or a Metaspace
// pre-tokenizer) turned into U+2581. tokenizer.json has no SentencePiece scores and llama.cpp's
// two converters write such a vocabulary differently, so the caller says which GGUF model to
// write (hf_tokenizer.h, SpmGgufModel).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "tokenizer/vocab.h"

namespace fulgur {

enum class SpmGgufModel;

// Whether tokenizer.json's model is SentencePiece-style (BPE with byte_fallback).
bool is_sentencepiece_json(const nlohmann::json& root);

// Whether the text gets a leading U+2581 (normalizer Prepend "▁", or a Metaspace pre-tokenizer
// whose prepend_scheme is not "never"). Throws fulgur::Error naming `source` and the field for a
// normalizer or pre-tokenizer that does anything but escape spaces (and prepend one).
bool sentencepiece_space_prefix(const nlohmann::json& root, std::string_view source);

// Turns the vocab vocab_from_hf_json read (token texts and added-token types as in
// tokenizer.json, merges, bos/eos) into what llama.cpp's converter writes:
//   kLlama (convert_hf_to_gguf.py _set_vocab_sentencepiece, as from the model's tokenizer.model):
//     model "llama", pre "default"; <0xXX> tokens BYTE; a user-defined token's U+2581 written as
//     spaces (the converter's "pre-normalize user-defined spaces"); scores: SentencePiece gives
//     each piece a score and transformers lists the merges of a SentencePiece BPE model in the
//     order of the piece they form, so a token's score is minus the rank of the first merge that
//     forms it (merging by score then merges in Hugging Face's order); byte and control tokens
//     0, user-defined ones -1000 (as the converter), other tokens no merge forms (single
//     characters) -1e9; add_space_prefix false when the text gets no prefix (Gemma), else left
//     to llama.cpp's default (true);
//   kGemma4 (conversion/gemma.py Gemma4Model.set_vocab): model "gemma4", texts as in
//     tokenizer.json, scores -1000, the merges kept; <0xXX> BYTE, added tokens marked special
//     CONTROL, the tool-call markers <|channel>, <channel|>, <|tool_call>, <tool_call|>,
//     <|tool_response>, <tool_response|>, <|"|> USER_DEFINED and every other token NORMAL (the
//     converter asks transformers for the special ids; fulgur takes tokenizer.json's special
//     flags); add_space_prefix false, add_bos true.
void finish_sentencepiece_vocab(Vocab& vocab, bool space_prefix, SpmGgufModel as);

}  // namespace fulgur
