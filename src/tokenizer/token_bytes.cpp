#include "tokenizer/token_bytes.h"

#include <algorithm>

#include "core/error.h"

namespace fulgur {

std::vector<std::string> token_bytes(const Tokenizer& tok, int64_t n_vocab, std::span<const int32_t> shown) {
  std::vector<std::string> out(static_cast<size_t>(n_vocab));
  const int64_t n = std::min<int64_t>(n_vocab, tok.n_tokens());
  for (int32_t id = 0; id < n; ++id) out[static_cast<size_t>(id)] = tok.token_piece(id, false);
  for (int32_t id : shown) {
    FULGUR_CHECK(id >= 0 && id < n, "token_bytes: shown token ", id, " is outside [0, ", n, ")");
    out[static_cast<size_t>(id)] = tok.token_piece(id, true);
  }
  return out;
}

std::vector<int32_t> eog_ids(const Tokenizer& tok, int64_t n_vocab) {
  std::vector<int32_t> out;
  const int64_t n = std::min<int64_t>(n_vocab, tok.n_tokens());
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_eog(id)) out.push_back(id);
  }
  return out;
}

}  // namespace fulgur
