// Streaming detokenizer: feed ids one at a time (as generation produces them) and get back only
// complete UTF-8. A byte-level token may end in the middle of a multi-byte character; those
// bytes are held until the character completes. Bytes that can never become valid UTF-8 are
// replaced by U+FFFD (one per maximal invalid subpart), and so is an incomplete tail at flush().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

  // CONTROL tokens whose text is shown even without render_special: the tags a chat format's
  // reply is read by (a tool call's open and close tokens), as llama-server's preserved tokens.
  void show_control_tokens(std::vector<int32_t> ids) { shown_ = std::move(ids); }

  // Forgets held bytes without emitting them (e.g. after a rollback of rejected drafts).
  void reset() { pending_.clear(); }
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::vector<int32_t> shown_;  // few: searched linearly
  std::string pending_;  // [< 4 bytes] start of a character that is not complete yet
};

}  // namespace fulgur
