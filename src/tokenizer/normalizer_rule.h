// Which text normalizer a GGUF vocabulary gets (the rule, DESIGN §6 / issue 19 §5).
//
// GGUF has no field for the Hugging Face normalizer, so llama.cpp applies none, and a file it
// wrote for a Qwen2/Qwen3 model tokenizes decomposed text ("e" + U+0301) differently from the
// model's own tokenizer.json, which declares NFC. The pre-tokenizer name alone cannot tell such
// a file apart from one whose tokenizer merely reuses the Qwen2 regex without NFC: the zoo's
// tokenizer is exactly that (`tokenizer.ggml.pre` = qwen2, no normalizer), and its GGUF
// (zoo-qwen35-code) carries no more than a llama.cpp-written Qwen3 file does. What does tell them
// apart is the BPE model itself: the merges list. So:
//  1. `tokenizer.fulgur.normalizer` ("nfc" | "none"), which fulgur's converter writes from
//     tokenizer.json, is authoritative when present (llama.cpp ignores the key);
//  2. otherwise NFC is applied when the pre-tokenizer and the exact merges list are those of a
//     known model family whose tokenizer.json declares NFC (kKnownNfcVocabularies: a count and
//     an FNV-1a hash of the merges, so the check costs one pass over them at load);
//  3. otherwise no normalizer, as llama.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace fulgur {

inline constexpr const char* kNormalizerKey = "tokenizer.fulgur.normalizer";

// "nfc" / "none" (the key's values).
const char* normalizer_name(Normalizer n);
// Throws fulgur::Error starting with `what` for any other value.
Normalizer parse_normalizer_name(std::string_view name, std::string_view what);

// FNV-1a (64-bit) over every merge followed by '\n', the fingerprint of rule 2.
uint64_t merges_fingerprint(const std::vector<std::string>& merges);

// Rule 2/3: the normalizer of a vocabulary whose GGUF does not record one.
Normalizer default_normalizer(std::string_view pre, const std::vector<std::string>& merges);

}  // namespace fulgur
