// The token vocabularies a server's grammars are matched against (grammar/token_mask.h), one per
// set of CONTROL tokens a grammar may emit. CONTROL tokens have no text, so no grammar can allow
// them; a grammar that must write some (a tool-call format whose tags are CONTROL tokens, such as
// some Gemma 4 vocabularies' <|tool_call>) is matched against a vocabulary in which exactly
// those tokens carry their text, while every other request's grammar keeps the plain one. Each
// distinct set is built once (the trie of a 150k vocabulary costs ~100 ms) and then shared.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace fulgur::server {

class TokenVocabs {
 public:
  // `tokenizer` must outlive this; n_vocab: the model's (may exceed the tokenizer's).
  TokenVocabs(const Tokenizer& tokenizer, int64_t n_vocab) : tokenizer_(tokenizer), n_vocab_(n_vocab) {}

  // The vocabulary in which the tokens of `control` (any order; repeats and tokens that already
  // have text change nothing) carry their text: the same object for the same set. Not
  // thread-safe (the engine thread's).
  std::shared_ptr<const TokenVocab> get(std::vector<int32_t> control);
  // How many distinct vocabularies were built.
  size_t size() const { return built_.size(); }

 private:
  const Tokenizer& tokenizer_;
  int64_t n_vocab_;
  std::map<std::vector<int32_t>, std::shared_ptr<const TokenVocab>> built_;  // by the sorted set
};

}  // namespace fulgur::server
