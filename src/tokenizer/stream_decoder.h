// Streaming detokenizer: feed ids one at a time (as generation produces them) and get back only
// complete UTF-8. A byte-level token may end in the middle of a multi-byte character; those
// bytes are held until the character completes. Bytes that can never become valid UTF-8 are
// replaced by U+FFFD (one per maximal invalid subpart), and so is an incomplete tail at flush().
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace fulgur {

class StreamDecoder {
 public:
  // `tokenizer` must outlive the decoder. render_special: show CONTROL tokens' text.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false);

  // Appends the text that became complete with this token to `out` (possibly nothing).
  void push(int32_t id, std::string& out);
  std::string push(int32_t id);

  // Ends the stream: any held incomplete character is emitted as U+FFFD. The decoder is then
  // empty and may be reused.
  void flush(std::string& out);
  std::string flush();

  // Forgets held bytes without emitting them (e.g. after a rollback of rejected drafts).
  void reset() { pending_.clear(); }
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;  // [< 4 bytes] start of a character that is not complete yet
};

}  // namespace fulgur
