#include "tokenizer/hf_sentencepiece.h"

#include <string>

#include "core/error.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/sentencepiece_text.h"
#include "tokenizer/token_index.h"

namespace fulgur {
namespace {

using json = nlohmann::json;

// llama.cpp's scores for tokens that have none of their own (convert_hf_to_gguf.py).
constexpr float kAddedTokenScore = -1000.0f;
// Below every merge's rank: SentencePiece merging reaches such a token (if any pair of symbols
// spells it) only after every merge Hugging Face knows, which never forms it.
constexpr float kUnmergedScore = -1e9f;

bool is_string_pattern(const json& node, std::string_view text) {
  const auto p = node.find("pattern");
  return p != node.end() && p->is_object() && p->value("String", "") == text;
}

// One normalizer step: Replace(" " -> "▁") escapes spaces, Prepend("▁") adds the prefix.
void read_normalizer_step(const json& step, std::string_view source, const std::string& path,
                          bool& escapes, bool& prefix) {
  const std::string type = step.is_object() ? step.value("type", "") : "";
  if (type == "Replace" && is_string_pattern(step, " ") && step.value("content", "") == kSpmSpace) {
    escapes = true;
  } else if (type == "Prepend" && step.value("prepend", "") == kSpmSpace) {
    prefix = true;
  } else {
    fail(source, ": ", path, " is ", step.dump(),
         "; a SentencePiece tokenizer.json may only replace ' ' with U+2581 and prepend U+2581");
  }
}

}  // namespace

bool is_sentencepiece_json(const json& root) {
  const auto model = root.find("model");
  return model != root.end() && model->is_object() && model->value("type", "") == "BPE" &&
         model->value("byte_fallback", false);
}

bool sentencepiece_space_prefix(const json& root, std::string_view source) {
  bool escapes = false, prefix = false;
  const auto norm = root.find("normalizer");
  if (norm != root.end() && !norm->is_null()) {
    if (norm->is_object() && norm->value("type", "") == "Sequence" &&
        norm->contains("normalizers") && (*norm)["normalizers"].is_array()) {
      const json& steps = (*norm)["normalizers"];
      for (size_t i = 0; i < steps.size(); ++i) {
        read_normalizer_step(steps[i], source, "normalizer.normalizers[" + std::to_string(i) + "]",
                             escapes, prefix);
      }
    } else {
      read_normalizer_step(*norm, source, "normalizer", escapes, prefix);
    }
  }
  const auto pre = root.find("pre_tokenizer");
  if (pre != root.end() && !pre->is_null()) {
    const std::string type = pre->is_object() ? pre->value("type", "") : "";
    if (type == "Metaspace" && pre->value("replacement", "") == kSpmSpace &&
        !pre->value("split", false)) {
      escapes = true;
      prefix = pre->value("prepend_scheme", pre->value("add_prefix_space", true) ? "always" : "never") !=
               "never";
    } else if (type == "Split" && is_string_pattern(*pre, " ") &&
               pre->value("behavior", "") == "MergedWithPrevious" && escapes) {
      // Gemma's: it splits the normalized text at ' ', which the normalizer has just replaced,
      // so it never splits.
    } else {
      fail(source, ": pre_tokenizer ", pre->dump(),
           " is not supported for a SentencePiece tokenizer (expected none, Metaspace without "
           "split, or Gemma's Split at ' ')");
    }
  }
  FULGUR_CHECK(escapes, source, ": a BPE model with byte_fallback but no normalizer or ",
               "pre-tokenizer writing spaces as U+2581; not a SentencePiece tokenizer fulgur knows");
  return prefix;
}

void finish_sentencepiece_vocab(Vocab& vocab, bool space_prefix, SpmGgufModel as) {
  const size_t n = vocab.tokens.size();
  for (size_t i = 0; i < n; ++i) {
    if (vocab.token_types[i] == TokenType::kNormal && byte_of_byte_token(vocab.tokens[i]) >= 0) {
      vocab.token_types[i] = TokenType::kByte;
    }
  }
  if (as == SpmGgufModel::kGemma4) {
    static constexpr std::string_view kVisible[] = {"<|channel>",       "<channel|>",
                                                    "<|tool_call>",     "<tool_call|>",
                                                    "<|tool_response>", "<tool_response|>",
                                                    "<|\"|>"};
    vocab.model = "gemma4";
    vocab.pre = "gemma4";
    vocab.scores.assign(n, kAddedTokenScore);
    for (size_t i = 0; i < n; ++i) {
      TokenType& t = vocab.token_types[i];
      if (t == TokenType::kUserDefined) t = TokenType::kNormal;
      for (std::string_view v : kVisible) {
        if (vocab.tokens[i] == v) t = TokenType::kUserDefined;
      }
    }
    vocab.add_space_prefix = false;
    vocab.add_bos = true;
    return;
  }
  vocab.model = "llama";
  vocab.pre = "default";
  vocab.scores.assign(n, kUnmergedScore);
  {
    const TokenIndex index(vocab.tokens.data(), n);
    std::vector<bool> merged(n, false);
    std::string joined;
    for (size_t r = 0; r < vocab.merges.size(); ++r) {
      const std::string& m = vocab.merges[r];
      const size_t sp = m.find(' ', 1);
      joined.assign(m, 0, sp);
      joined.append(m, sp + 1);
      const int32_t id = index.find(joined);
      if (id < 0 || merged[id]) continue;
      merged[id] = true;
      vocab.scores[id] = -static_cast<float>(r);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    switch (vocab.token_types[i]) {
      case TokenType::kByte:
      case TokenType::kControl:
      case TokenType::kUnknown:
        vocab.scores[i] = 0.0f;
        break;
      case TokenType::kUserDefined:
        vocab.scores[i] = kAddedTokenScore;
        vocab.tokens[i] = spm_unescaped(vocab.tokens[i]);
        break;
      case TokenType::kUnused:
        vocab.scores[i] = kAddedTokenScore;
        break;
      case TokenType::kNormal:
        break;
    }
  }
  vocab.merges.clear();  // a "llama" vocabulary merges by score, and the converter writes none
  if (!space_prefix) vocab.add_space_prefix = false;
}

}  // namespace fulgur
