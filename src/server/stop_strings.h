// Stop strings on streamed text (OpenAI's `stop`): the reply ends before the first occurrence of
// any stop string, which is not sent. While streaming, text that might be the start of a stop
// string is held back until the next piece shows whether it is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fulgur::server {

// The length of the longest tail of `text` that is a proper prefix of `pattern`: how much of a
// stream must be held back because the next piece may complete `pattern` there.
size_t partial_match_tail(std::string_view text, std::string_view pattern);

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}

  // Appends generated text; returns what can be sent now. After a stop string appeared,
  // stopped() is true, the text before it has been returned and everything later is dropped.
  std::string push(std::string_view text);
  // The end of generation: the text still held back (none after a stop).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // a tail that is a prefix of some stop string
  bool stopped_ = false;
};

}  // namespace fulgur::server
