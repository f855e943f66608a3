// The SentencePiece-style models, "llama" (llama.cpp's llm_tokenizer_spm_session) and "gemma4"
// (its BPE session with the gemma4 pre-tokenizer): both start from UTF-8 characters of the
// U+2581-escaped text and fall back to <0xXX> tokens; they differ in which pairs merge first.
#include "tokenizer/encode_scratch.h"
#include "tokenizer/sentencepiece_text.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

// llama.cpp's unicode_len_utf8: the sequence length a lead byte announces, read from its high
// nibble only (a stray continuation byte is a character of its own, 0xF8.. claims four).
size_t lead_length(unsigned char b) {
  static constexpr uint8_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLength[b >> 4];
}

// The gemma4 pre-tokenizer is a regex split, and llama.cpp runs every regex split on code points:
// it decodes the text leniently (unicode_cpts_from_utf8: a lead byte and the continuation bytes
// it announces make a code point, overlong forms and surrogates included; any other byte becomes
// U+FFFD) and encodes each word back in the shortest form. The words the merges see are that
// re-encoding, so fulgur makes the same one. A code point above U+10FFFF (from F4 90 .. F7 BF
// BF BF) makes llama.cpp throw; fulgur keeps its four bytes as they are.
void append_llama_recoded(std::string& out, std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  auto continuation = [&](size_t i) { return i < n && (p[i] & 0xC0) == 0x80; };
  for (size_t i = 0; i < n;) {
    const unsigned char b = p[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (b < 0x80) {
      len = 1, cp = b;
    } else if ((b & 0xE0) == 0xC0 && continuation(i + 1)) {
      len = 2, cp = (b & 0x1Fu) << 6 | (p[i + 1] & 0x3Fu);
    } else if ((b & 0xF0) == 0xE0 && continuation(i + 1) && continuation(i + 2)) {
      len = 3, cp = (b & 0x0Fu) << 12 | (p[i + 1] & 0x3Fu) << 6 | (p[i + 2] & 0x3Fu);
    } else if ((b & 0xF8) == 0xF0 && continuation(i + 1) && continuation(i + 2) &&
               continuation(i + 3)) {
      len = 4, cp = (b & 0x07u) << 18 | (p[i + 1] & 0x3Fu) << 12 | (p[i + 2] & 0x3Fu) << 6 |
                    (p[i + 3] & 0x3Fu);
    }
    if (len == 0) {
      append_utf8(out, 0xFFFD);
      i += 1;
    } else if (cp > 0x10FFFF) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      append_utf8(out, cp);
      i += len;
    }
  }
}

}  // namespace

void Tokenizer::start_char_symbols(std::string_view word) const {
  std::vector<MergeSymbol>& symbols = encode_scratch().merger.symbols;
  symbols.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(word.data());
  for (size_t i = 0; i < word.size();) {
    const size_t len = std::min(lead_length(p[i]), word.size() - i);
    symbols.push_back({static_cast<int32_t>(i), static_cast<int32_t>(len),
                       text_to_id_.find(word.substr(i, len)), -1, -1});
    i += len;
  }
  encode_scratch().merger.link_symbols();
}

void Tokenizer::emit_with_byte_fallback(std::string_view word, std::vector<int32_t>& out) const {
  encode_scratch().merger.for_each_symbol([&](const MergeSymbol& sym) {
    if (sym.id >= 0) {
      out.push_back(sym.id);
      return;
    }
    for (int32_t i = 0; i < sym.length; ++i) {
      out.push_back(byte_token_[static_cast<unsigned char>(word[sym.start + i])]);
    }
  });
}

void Tokenizer::encode_sentencepiece(std::string_view text, std::vector<int32_t>& out) const {
  EncodeScratch& s = encode_scratch();
  s.escaped.clear();
  if (add_space_prefix_) s.escaped += kSpmSpace;
  append_spm_escaped(s.escaped, text);
  const std::string_view word = s.escaped;  // SentencePiece merges over the whole fragment
  start_char_symbols(word);
  s.merger.run_merges([&](const MergeSymbol& l, const MergeSymbol& r) -> std::optional<PairMerge> {
    // Symbols are adjacent spans of `word`, so the pair's text is one span.
    const int32_t id = text_to_id_.find(word.substr(l.start, l.length + r.length));
    if (id < 0) return std::nullopt;
    return PairMerge{vocab_.scores[id], id};
  });
  emit_with_byte_fallback(word, out);
}

void Tokenizer::encode_gemma4(std::string_view text, std::vector<int32_t>& out) const {
  EncodeScratch& s = encode_scratch();
  s.escaped.clear();
  append_spm_escaped(s.escaped, text);
  s.recoded.clear();
  append_llama_recoded(s.recoded, s.escaped);
  const std::string_view all = s.recoded;
  // The gemma4 pre-tokenizer's regex [^\n]+|[\n]+: runs of newlines apart from everything else.
  for (size_t i = 0; i < all.size();) {
    const bool newlines = all[i] == '\n';
    size_t end = i;
    while (end < all.size() && (all[end] == '\n') == newlines) ++end;
    const std::string_view word = all.substr(i, end - i);
    i = end;
    if (newlines) {  // a run of newlines that is a token is that token (llama.cpp PR 21343)
      const int32_t id = text_to_id_.find(word);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    start_char_symbols(word);
    s.merger.run_merges(
        [this](const MergeSymbol& l, const MergeSymbol& r) { return rank_merge(l, r); });
    emit_with_byte_fallback(word, out);
  }
}

}  // namespace fulgur
