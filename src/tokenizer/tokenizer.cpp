#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

// Texts that end generation whatever the GGUF's eos says (llama-vocab.cpp load, §5.1).
constexpr std::string_view kEogTexts[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>",
                                          "<|end|>",    "</s>",          "<eos>",
                                          "<turn|>",    "<|return|>",    "<|call|>"};

// Reused across the words of one encode() call so BPE allocates only when a word is longer
// than any before it.
struct BpeScratch {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // neighbours in the live list, -1 at the ends
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index; the right symbol is symbols[left].next at push time
    int32_t left_id, right_id, result;
  };
  std::vector<Symbol> symbols;  // [word bytes]
  std::vector<Candidate> heap;  // min-heap on (rank, left)
  std::vector<std::string_view> pieces, pieces_tmp;
  std::string normalized, mapped;
};

BpeScratch& bpe_scratch() {
  thread_local BpeScratch s;
  return s;
}

bool candidate_after(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  // std heap functions build a max-heap; "after" ordering turns it into a min-heap on
  // (rank, left): lowest rank first, leftmost first among equal ranks (HF / llama.cpp order).
  return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string decode_normal_text(std::string_view text) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    const Utf8Step s = utf8_step(p + i, text.size() - i);
    if (s.kind != Utf8Step::kValid) {  // malformed token text: keep its bytes as they are
      out.append(text.substr(i, s.length));
      i += s.length;
      continue;
    }
    const int b = codepoint_to_byte(s.cp);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(text.substr(i, s.length));
    }
    i += s.length;
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  FULGUR_CHECK(vocab_.model == "gpt2", "tokenizer.ggml.model is '", vocab_.model,
               "'; only byte-level BPE ('gpt2') is supported");
  const size_t n = vocab_.tokens.size();
  FULGUR_CHECK(n > 0 && n < (size_t{1} << 31), "tokenizer.ggml.tokens has ", n,
               " entries; expected 1 .. 2^31-1");
  if (vocab_.token_types.empty()) vocab_.token_types.assign(n, TokenType::kNormal);
  FULGUR_CHECK(vocab_.token_types.size() == n, "tokenizer.ggml.token_type has ",
               vocab_.token_types.size(), " entries; expected one per token (", n, ")");
  for (size_t i = 0; i < n; ++i) {
    const auto t = static_cast<int32_t>(vocab_.token_types[i]);
    FULGUR_CHECK(t >= 1 && t <= 6, "tokenizer.ggml.token_type[", i, "] = ", t, "; expected 1..6");
  }
  check_id(vocab_.bos_id, "tokenizer.ggml.bos_token_id");
  check_id(vocab_.eos_id, "tokenizer.ggml.eos_token_id");
  check_id(vocab_.eot_id, "tokenizer.ggml.eot_token_id");
  check_id(vocab_.pad_id, "tokenizer.ggml.padding_token_id");
  check_id(vocab_.unk_id, "tokenizer.ggml.unknown_token_id");
  check_id(vocab_.mask_id, "tokenizer.ggml.mask_token_id");
  FULGUR_CHECK(!vocab_.add_bos || vocab_.bos_id >= 0,
               "tokenizer.ggml.add_bos_token is true but there is no bos_token_id");
  FULGUR_CHECK(!vocab_.add_eos || vocab_.eos_id >= 0,
               "tokenizer.ggml.add_eos_token is true but there is no eos_token_id");

  pre_ = std::make_unique<PreTokenizer>(vocab_.pre);

  text_to_id_ = TokenIndex(vocab_.tokens.data(), n);

  for (int b = 0; b < 256; ++b) {
    std::string ch;
    append_utf8(ch, byte_to_codepoint(static_cast<uint8_t>(b)));
    const int32_t id = text_to_id_.find(ch);
    FULGUR_CHECK(id >= 0, "tokenizer.ggml.tokens has no token for byte 0x",
                 "0123456789ABCDEF"[b >> 4], "0123456789ABCDEF"[b & 15], " ('", ch,
                 "'); a byte-level BPE vocabulary needs all 256");
    byte_token_[b] = id;
  }
  build_merges();

  pieces_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = vocab_.tokens[i];
    switch (vocab_.token_types[i]) {
      case TokenType::kNormal:
        pieces_[i] = decode_normal_text(text);
        break;
      case TokenType::kByte:
        if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
            hex_digit(text[3]) >= 0 && hex_digit(text[4]) >= 0) {
          pieces_[i] =
              std::string(1, static_cast<char>(hex_digit(text[3]) * 16 + hex_digit(text[4])));
        } else {
          pieces_[i] = text;
        }
        break;
      case TokenType::kUnused:
        break;
      default:  // control, unknown, user-defined: their text as written
        pieces_[i] = text;
    }
  }
  build_specials();

  for (int32_t id : {vocab_.eos_id, vocab_.eot_id}) {
    if (id >= 0) eog_ids_.push_back(id);
  }
  for (std::string_view text : kEogTexts) {
    const int32_t id = token_to_id(text);
    if (id >= 0) eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

void Tokenizer::check_id(int32_t id, const char* what) const {
  FULGUR_CHECK(id >= -1 && id < n_tokens(), what, " = ", id, "; expected a token id below ",
               n_tokens(), " (or absent)");
}

void Tokenizer::build_merges() {
  merges_.reserve(vocab_.merges.size());
  std::string joined;
  for (size_t r = 0; r < vocab_.merges.size(); ++r) {
    const std::string& m = vocab_.merges[r];
    // Split at the first space from index 1 on, so a left side that is itself a space-like
    // character still parses (archs-gguf.md §5.1).
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    FULGUR_CHECK(sp != std::string::npos && sp + 1 < m.size(), "tokenizer.ggml.merges[", r, "] = '",
                 m, "'; expected 'left right'");
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    joined.assign(left);
    joined.append(right);
    const int32_t l = token_to_id(left), rt = token_to_id(right), res = token_to_id(joined);
    FULGUR_CHECK(l >= 0 && rt >= 0 && res >= 0, "tokenizer.ggml.merges[", r, "] = '", m, "': '",
                 l < 0    ? std::string(left)
                 : rt < 0 ? std::string(right)
                          : joined,
                 "' is not a token");
    merges_.emplace(pair_key(l, rt), Merge{static_cast<int32_t>(r), res});  // first rank wins
  }
}

void Tokenizer::build_specials() {
  for (size_t i = 0; i < vocab_.tokens.size(); ++i) {
    const TokenType t = vocab_.token_types[i];
    const bool control = t == TokenType::kControl || t == TokenType::kUnknown;
    if ((!control && t != TokenType::kUserDefined) || vocab_.tokens[i].empty()) continue;
    specials_.push_back({vocab_.tokens[i], static_cast<int32_t>(i), control});
    special_first_byte_[static_cast<uint8_t>(vocab_.tokens[i][0])] = true;
  }
  std::stable_sort(
      specials_.begin(), specials_.end(),
      [](const SpecialToken& a, const SpecialToken& b) { return a.text.size() > b.text.size(); });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special,
                                       bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);

  size_t fragment = 0;  // start of the text not yet encoded
  if (!specials_.empty()) {
    for (size_t pos = 0; pos < text.size();) {
      const SpecialToken* hit = nullptr;
      if (special_first_byte_[static_cast<uint8_t>(text[pos])]) {
        for (const SpecialToken& s : specials_) {  // longest first
          if ((parse_special || !s.needs_parse_special) &&
              text.compare(pos, s.text.size(), s.text) == 0) {
            hit = &s;
            break;
          }
        }
      }
      if (hit == nullptr) {
        ++pos;
        continue;
      }
      encode_text(text.substr(fragment, pos - fragment), out);
      out.push_back(hit->id);
      pos += hit->text.size();
      fragment = pos;
    }
  }
  encode_text(text.substr(fragment), out);

  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

void Tokenizer::encode_text(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  BpeScratch& s = bpe_scratch();
  std::string_view source = text;
  if (vocab_.normalizer == Normalizer::kNfc) {
    s.normalized = nfc_normalize(text);
    source = s.normalized;
  }
  s.pieces.clear();
  pre_->split(source, s.pieces, s.pieces_tmp);
  for (std::string_view word : s.pieces) encode_word(word, out);
}

void Tokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const auto* bytes = reinterpret_cast<const unsigned char*>(word.data());
  if (word.size() == 1) {
    out.push_back(byte_token_[bytes[0]]);
    return;
  }
  BpeScratch& s = bpe_scratch();  // encode_text's pieces live here too; only other fields change
  if (vocab_.ignore_merges) {
    s.mapped.clear();
    for (unsigned char b : word) append_utf8(s.mapped, byte_to_codepoint(b));
    const int32_t id = token_to_id(s.mapped);
    if (id >= 0 && vocab_.token_types[id] == TokenType::kNormal) {
      out.push_back(id);
      return;
    }
  }

  const auto n = static_cast<int32_t>(word.size());
  s.symbols.resize(word.size());
  s.heap.clear();
  for (int32_t i = 0; i < n; ++i)
    s.symbols[i] = {byte_token_[bytes[i]], i - 1, i + 1 < n ? i + 1 : -1};
  auto try_push = [&](int32_t left) {
    const int32_t right = s.symbols[left].next;
    if (left < 0 || right < 0) return;
    const auto it = merges_.find(pair_key(s.symbols[left].id, s.symbols[right].id));
    if (it == merges_.end()) return;
    s.heap.push_back(
        {it->second.rank, left, s.symbols[left].id, s.symbols[right].id, it->second.result});
    std::push_heap(s.heap.begin(), s.heap.end(), candidate_after);
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_push(i);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), candidate_after);
    const BpeScratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    BpeScratch::Symbol& left = s.symbols[c.left];
    // Stale when either side has merged since the push: the left symbol's id or its right
    // neighbour's id no longer matches (a dead symbol has id -1).
    if (left.id != c.left_id || left.next < 0 || s.symbols[left.next].id != c.right_id) continue;
    const int32_t right_index = left.next;
    BpeScratch::Symbol& right = s.symbols[right_index];
    left.id = c.result;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    right.id = -1;
    if (left.prev >= 0) try_push(left.prev);
    try_push(c.left);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next) out.push_back(s.symbols[i].id);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) out += token_piece(id, render_special);
  return out;
}

const std::string& Tokenizer::token_piece(int32_t id, bool render_special) const {
  static const std::string kEmpty;
  FULGUR_CHECK(id >= 0 && id < n_tokens(), "token id ", id, " is out of range [0, ", n_tokens(),
               ")");
  const TokenType t = vocab_.token_types[id];
  if (!render_special && (t == TokenType::kControl || t == TokenType::kUnknown)) return kEmpty;
  return pieces_[id];
}

const std::string& Tokenizer::token_text(int32_t id) const {
  FULGUR_CHECK(id >= 0 && id < n_tokens(), "token id ", id, " is out of range [0, ", n_tokens(),
               ")");
  return vocab_.tokens[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  FULGUR_CHECK(id >= 0 && id < n_tokens(), "token id ", id, " is out of range [0, ", n_tokens(),
               ")");
  return vocab_.token_types[id];
}

int32_t Tokenizer::token_to_id(std::string_view text) const {
  return text_to_id_.find(text);
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace fulgur
