#include "server/token_vocabs.h"

#include <algorithm>

#include "tokenizer/token_bytes.h"

namespace fulgur::server {

std::shared_ptr<const TokenVocab> TokenVocabs::get(std::vector<int32_t> control) {
  // The key is the set of tokens that gain text here: a token with text of its own adds nothing.
  std::sort(control.begin(), control.end());
  control.erase(std::unique(control.begin(), control.end()), control.end());
  std::erase_if(control, [&](int32_t id) {
    return id >= 0 && id < tokenizer_.n_tokens() && !tokenizer_.token_piece(id, false).empty();
  });
  auto it = built_.find(control);
  if (it == built_.end()) {
    auto vocab = std::make_shared<const TokenVocab>(token_bytes(tokenizer_, n_vocab_, control),
                                                    eog_ids(tokenizer_, n_vocab_));
    it = built_.emplace(std::move(control), std::move(vocab)).first;
  }
  return it->second;
}

}  // namespace fulgur::server
