// Byte-level BPE ("gpt2"): pre-tokens of the (normalized) text, their bytes as GPT-2 stand-in
// characters, merged lowest rank first (archs-gguf.md §5.4).
#include "tokenizer/encode_scratch.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {

void Tokenizer::encode_byte_level(std::string_view text, std::vector<int32_t>& out) const {
  EncodeScratch& s = encode_scratch();
  std::string_view source = text;
  if (vocab_.normalizer == Normalizer::kNfc) {
    s.normalized = nfc_normalize(text);
    source = s.normalized;
  }
  s.pieces.clear();
  pre_->split(source, s.pieces, s.pieces_tmp);
  for (std::string_view word : s.pieces) encode_byte_level_word(word, out);
}

void Tokenizer::encode_byte_level_word(std::string_view word, std::vector<int32_t>& out) const {
  const auto* bytes = reinterpret_cast<const unsigned char*>(word.data());
  if (word.size() == 1) {
    out.push_back(byte_token_[bytes[0]]);
    return;
  }
  EncodeScratch& s = encode_scratch();  // encode_byte_level's pieces live here too; untouched
  if (vocab_.ignore_merges) {
    s.mapped.clear();
    for (unsigned char b : word) append_utf8(s.mapped, byte_to_codepoint(b));
    const int32_t id = token_to_id(s.mapped);
    if (id >= 0 && vocab_.token_types[id] == TokenType::kNormal) {
      out.push_back(id);
      return;
    }
  }
  // One symbol per byte: every byte has its token, so every symbol has an id.
  std::vector<MergeSymbol>& symbols = s.merger.symbols;
  symbols.resize(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    symbols[i].start = static_cast<int32_t>(i);
    symbols[i].length = 1;
    symbols[i].id = byte_token_[bytes[i]];
  }
  s.merger.link_symbols();
  s.merger.run_merges([this](const MergeSymbol& l, const MergeSymbol& r) { return rank_merge(l, r); });
  s.merger.for_each_symbol([&](const MergeSymbol& sym) { out.push_back(sym.id); });
}

}  // namespace fulgur
