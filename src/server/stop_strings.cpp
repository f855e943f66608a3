#include "server/stop_strings.h"

#include <algorithm>
#include <utility>

namespace fulgur::server {

size_t partial_match_tail(std::string_view text, std::string_view pattern) {
  for (size_t n = std::min(pattern.size() - (pattern.empty() ? 0 : 1), text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == pattern.substr(0, n)) return n;
  }
  return 0;
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // The earliest full match of any stop string ends the text.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold the longest tail that some stop string starts with.
  size_t keep = 0;
  for (const std::string& s : stops_) keep = std::max(keep, partial_match_tail(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() { return stopped_ ? std::string() : std::exchange(held_, {}); }

}  // namespace fulgur::server
