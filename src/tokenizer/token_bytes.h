// What each token adds to the text, as constrained generation (grammar/token_mask.h) matches it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace fulgur {

// [n_vocab] each id's bytes (token_piece without control tokens: "" for those, and for ids the
// model has beyond the tokenizer's vocabulary), except that the CONTROL tokens in `shown` carry
// their text (the tags a grammar must be able to emit, such as a tool-call format's).
std::vector<std::string> token_bytes(const Tokenizer& tok, int64_t n_vocab, std::span<const int32_t> shown = {});
// The end-of-generation ids below n_vocab.
std::vector<int32_t> eog_ids(const Tokenizer& tok, int64_t n_vocab);

}  // namespace fulgur
