#include "tokenizer/gguf_vocab.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tokenizer/normalizer_rule.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab_model.h"

namespace fulgur {
namespace {

// The optional special-token ids, in the order llama.cpp's SpecialVocab writes them.
struct SpecialKey {
  const char* key;
  int32_t Vocab::*field;
};
constexpr SpecialKey kSpecialKeys[] = {
    {"tokenizer.ggml.bos_token_id", &Vocab::bos_id},
    {"tokenizer.ggml.eos_token_id", &Vocab::eos_id},
    {"tokenizer.ggml.eot_token_id", &Vocab::eot_id},
    {"tokenizer.ggml.unknown_token_id", &Vocab::unk_id},
    {"tokenizer.ggml.padding_token_id", &Vocab::pad_id},
    {"tokenizer.ggml.mask_token_id", &Vocab::mask_id},
};

void check_vocab(const Vocab& v) {
  const VocabModel model = parse_vocab_model(v.model, "write_vocab");
  FULGUR_CHECK(!v.tokens.empty(), "write_vocab: the vocabulary has no tokens");
  FULGUR_CHECK(v.tokens.size() < (size_t{1} << 31), "write_vocab: ", v.tokens.size(),
               " tokens do not fit int32 ids");
  FULGUR_CHECK(v.token_types.empty() || v.token_types.size() == v.tokens.size(),
               "write_vocab: token_types has ", v.token_types.size(), " entries, expected ",
               v.tokens.size(), " (one per token)");
  FULGUR_CHECK(v.scores.empty() ? model != VocabModel::kLlama : v.scores.size() == v.tokens.size(),
               "write_vocab: scores has ", v.scores.size(), " entries, expected ", v.tokens.size(),
               " (one per token; a 'llama' vocabulary needs them)");
  const auto n = static_cast<int64_t>(v.tokens.size());
  for (const SpecialKey& s : kSpecialKeys) {
    const int32_t id = v.*s.field;
    FULGUR_CHECK(id >= -1 && id < n, "write_vocab: ", s.key, " = ", id, " is outside [0, ", n,
                 ") (use -1 for absent)");
  }
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    FULGUR_CHECK(m.size() >= 3 && m.find(' ', 1) != std::string::npos &&
                     m.find(' ', 1) + 1 < m.size(),
                 "write_vocab: merges[", i, "] = '", m, "' is not 'left right'");
  }
}

}  // namespace

void write_vocab(GgufWriter& w, const Vocab& v, const std::string& chat_template) {
  check_vocab(v);
  const VocabModel model = parse_vocab_model(v.model, "write_vocab");
  w.set_string("tokenizer.ggml.model", v.model);
  // llama.cpp's gemma4 converter writes no pre-tokenizer name (the loader implies "gemma4").
  if (model != VocabModel::kGemma4) w.set_string("tokenizer.ggml.pre", v.pre);
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  if (!v.scores.empty()) w.set_array("tokenizer.ggml.scores", v.scores);
  std::vector<int32_t> types(v.tokens.size(), static_cast<int32_t>(TokenType::kNormal));  // [n_vocab]
  for (size_t i = 0; i < v.token_types.size(); ++i) types[i] = static_cast<int32_t>(v.token_types[i]);
  w.set_array("tokenizer.ggml.token_type", types);
  if (model != VocabModel::kLlama) w.set_string_array("tokenizer.ggml.merges", v.merges);
  for (const SpecialKey& s : kSpecialKeys) {
    const int32_t id = v.*s.field;
    if (id >= 0) w.set_u32(s.key, static_cast<uint32_t>(id));
  }
  // fulgur's record of the Hugging Face normalizer (tokenizer/normalizer_rule.h); llama.cpp
  // ignores it. Only byte-level vocabularies have one.
  if (model == VocabModel::kGpt2) w.set_string(kNormalizerKey, normalizer_name(v.normalizer));
  if (v.add_space_prefix) w.set_bool("tokenizer.ggml.add_space_prefix", *v.add_space_prefix);
  w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  if (v.add_eos) w.set_bool("tokenizer.ggml.add_eos_token", true);
  if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
}

Vocab read_vocab(const GgufReader& r) {
  FULGUR_CHECK(r.has("tokenizer.ggml.model"), r.where(),
               ": has no tokenizer (key 'tokenizer.ggml.model' is missing)");
  Vocab v;
  v.model = r.get_string("tokenizer.ggml.model");
  const VocabModel model = parse_vocab_model(v.model, r.what("tokenizer.ggml.model"));
  if (model == VocabModel::kGpt2) {
    FULGUR_CHECK(r.has("tokenizer.ggml.pre"), r.what("tokenizer.ggml.pre"),
                 ": missing (llama.cpp's 'default' pre-tokenizer is not supported)");
    v.pre = r.get_string("tokenizer.ggml.pre");
    v.ignore_merges = default_ignore_merges(v.pre);  // also rejects an unknown name
  } else {
    // SentencePiece has no pre-tokenizer; gemma4's is implied by the model, as in llama.cpp.
    v.pre = model == VocabModel::kGemma4 ? "gemma4" : r.get_string("tokenizer.ggml.pre", "default");
  }
  v.tokens = r.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.tokens.size();
  FULGUR_CHECK(n > 0, r.what("tokenizer.ggml.tokens"), ": is empty");
  FULGUR_CHECK(n < (size_t{1} << 31), r.what("tokenizer.ggml.tokens"), ": ", n,
               " tokens do not fit int32 ids");
  if (r.has("tokenizer.ggml.token_type")) {
    const std::vector<int32_t> types = r.get_int_array<int32_t>("tokenizer.ggml.token_type");
    FULGUR_CHECK(types.size() == n, r.what("tokenizer.ggml.token_type"), ": has ", types.size(),
                 " entries, expected ", n, " (one per token)");
    v.token_types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      FULGUR_CHECK(types[i] >= 1 && types[i] <= 6, r.what("tokenizer.ggml.token_type"), ": [", i,
                   "] = ", types[i], "; expected 1..6");
      v.token_types[i] = static_cast<TokenType>(types[i]);
    }
  }
  if (r.has("tokenizer.ggml.scores")) {
    v.scores = r.get_array<float>("tokenizer.ggml.scores");
    FULGUR_CHECK(v.scores.size() == n, r.what("tokenizer.ggml.scores"), ": has ", v.scores.size(),
                 " entries, expected ", n, " (one per token)");
  } else {
    FULGUR_CHECK(model != VocabModel::kLlama, r.what("tokenizer.ggml.scores"),
                 ": missing (a SentencePiece 'llama' vocabulary merges by token score)");
  }
  if (model != VocabModel::kLlama) {
    FULGUR_CHECK(r.has("tokenizer.ggml.merges"), r.what("tokenizer.ggml.merges"), ": missing (a '",
                 v.model, "' BPE vocabulary needs merges)");
    v.merges = r.get_string_array("tokenizer.ggml.merges");
  }
  if (model == VocabModel::kLlama) {
    // llama.cpp's SentencePiece defaults, kept where the key is absent and the id exists.
    v.bos_id = n > 1 ? 1 : -1;
    v.eos_id = n > 2 ? 2 : -1;
    v.unk_id = 0;
  }
  for (const SpecialKey& s : kSpecialKeys) {
    const std::optional<uint32_t> id = r.find_int<uint32_t>(s.key);
    if (!id) continue;
    FULGUR_CHECK(*id < n, r.what(s.key), ": token id ", *id, " is outside the vocabulary of ", n,
                 " tokens");
    v.*s.field = static_cast<int32_t>(*id);
  }
  // SentencePiece adds BOS unless the file says otherwise; llama.cpp always adds it for gemma4
  // (it overrides a false add_bos_token for Gemma 4).
  v.add_bos = r.get_bool("tokenizer.ggml.add_bos_token",
                         model == VocabModel::kLlama || (model == VocabModel::kGpt2 && default_add_bos(v.pre))) ||
              model == VocabModel::kGemma4;
  v.add_eos = r.get_bool("tokenizer.ggml.add_eos_token", false);
  if (r.has("tokenizer.ggml.add_space_prefix")) {
    v.add_space_prefix = r.get_bool("tokenizer.ggml.add_space_prefix");
  }
  v.normalizer = model != VocabModel::kGpt2 ? Normalizer::kNone
                 : r.has(kNormalizerKey)
                     ? parse_normalizer_name(r.get_string(kNormalizerKey), r.what(kNormalizerKey))
                     : default_normalizer(v.pre, v.merges);
  return v;
}

}  // namespace fulgur
