#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/clean_spaces.h"
#include "tokenizer/sentencepiece_text.h"
#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

// Texts that end generation whatever the GGUF's eos says (llama-vocab.cpp load, §5.1). llama.cpp
// also makes each such token CONTROL when the file typed it otherwise, so that it is matched only
// with parse_special and hidden when decoding without specials.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",    "<|im_end|>",         "<|end|>",          "<|return|>",
    "<|call|>",      "<|flush|>",          "<|calls|>",        "<end_of_turn>",
    "<|endoftext|>", "</s>",               "<|eom_id|>",       "<EOT>",
    "_<EOT>",        "[EOT]",              "[EOS]",            "<|end_of_text|>",
    "<end_of_utterance>", "<eos>",         "<turn|>",          "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",  // DeepSeek's
    "[e~["};

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

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  model_ = parse_vocab_model(vocab_.model, "tokenizer.ggml.model");
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
  if (model_ == VocabModel::kLlama) {
    FULGUR_CHECK(!vocab_.scores.empty(), "tokenizer.ggml.scores is missing; a SentencePiece ",
                 "('llama') vocabulary merges pairs by the score of the token they form");
  }
  FULGUR_CHECK(vocab_.scores.empty() || vocab_.scores.size() == n, "tokenizer.ggml.scores has ",
               vocab_.scores.size(), " entries; expected one per token (", n, ")");
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
  add_space_prefix_ = effective_add_space_prefix(vocab_);

  if (model_ == VocabModel::kGpt2) pre_ = std::make_unique<PreTokenizer>(vocab_.pre);
  text_to_id_ = TokenIndex(vocab_.tokens.data(), n);
  // Gemma 4 ends turns with <|tool_response>; llama.cpp then keeps "</s>" an ordinary token.
  const int32_t plain_end = token_to_id("<|tool_response>") >= 0 ? token_to_id("</s>") : -1;
  for (std::string_view text : kEogTexts) {
    const int32_t id = token_to_id(text);
    if (id < 0 || id == plain_end) continue;
    eog_ids_.push_back(id);
    vocab_.token_types[id] = TokenType::kControl;
  }
  apply_harmony_rules();
  build_byte_tokens();
  if (model_ != VocabModel::kLlama) build_merges();  // SentencePiece needs no merge rules
  build_pieces();
  build_specials();

  for (int32_t id : {vocab_.eos_id, vocab_.eot_id}) {
    if (id >= 0) eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

void Tokenizer::build_pieces() {
  const size_t n = vocab_.tokens.size();
  pieces_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = vocab_.tokens[i];
    switch (vocab_.token_types[i]) {
      case TokenType::kNormal:
        pieces_[i] = model_ == VocabModel::kGpt2 ? decode_normal_text(text) : spm_unescaped(text);
        break;
      case TokenType::kByte: {
        const int b = byte_of_byte_token(text);
        pieces_[i] = b >= 0 ? std::string(1, static_cast<char>(b)) : text;
        break;
      }
      case TokenType::kUnused:
        break;
      default:  // control, unknown, user-defined: their text as written
        pieces_[i] = text;
    }
  }
}

void Tokenizer::check_id(int32_t id, const char* what) const {
  FULGUR_CHECK(id >= -1 && id < n_tokens(), what, " = ", id, "; expected a token id below ",
               n_tokens(), " (or absent)");
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
      if (pos > fragment) {
        encode_fragment(text.substr(fragment, pos - fragment), out);
      }
      out.push_back(hit->id);
      pos += hit->text.size();
      fragment = pos;
    }
  }
  if (fragment < text.size()) encode_fragment(text.substr(fragment), out);

  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

void Tokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  switch (model_) {
    case VocabModel::kGpt2:
      encode_byte_level(text, out);
      break;
    case VocabModel::kLlama:
      encode_sentencepiece(text, out);
      break;
    case VocabModel::kGemma4:
      encode_gemma4(text, out);
      break;
  }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string_view piece = token_piece(ids[i], render_special);
    if (i == 0 && add_space_prefix_ && !piece.empty() && piece.front() == ' ') {
      piece.remove_prefix(1);
    }
    out += piece;
  }
  // llama.cpp cleans up spaces for its BPE vocabularies; of fulgur's SentencePiece-style ones
  // that is gemma4 (byte-level vocabularies are decoded as they are).
  if (model_ == VocabModel::kGemma4) clean_up_spaces(out);
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

// OpenAI's harmony vocabularies (o200k_harmony: gpt-oss) as llama.cpp reads them: a reply ends
// with <|return|> or <|call|>, while <|end|> only closes one message (the analysis before the
// final answer), so with both of those present <|end|> does not end generation and becomes
// USER_DEFINED; the same holds for <|calls|> and <|flush|> (solar-open). The header tokens
// <|start|>, <|channel|>, <|message|> and <|constrain|> are USER_DEFINED too, so a reply's text
// shows its message structure (which the harmony reply parser reads).
void Tokenizer::apply_harmony_rules() {
  const auto eog = [&](std::string_view text) {
    const int32_t id = token_to_id(text);
    return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
  };
  const int32_t end = token_to_id("<|end|>");
  if (eog("<|end|>") && ((eog("<|return|>") && eog("<|call|>")) || (eog("<|calls|>") && eog("<|flush|>")))) {
    eog_ids_.erase(std::find(eog_ids_.begin(), eog_ids_.end(), end));
    vocab_.token_types[end] = TokenType::kUserDefined;
  }
  for (std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const int32_t id = token_to_id(text);
    if (id >= 0) vocab_.token_types[id] = TokenType::kUserDefined;
  }
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace fulgur
