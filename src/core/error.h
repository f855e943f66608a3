// Errors: validation at load time and at API boundaries throws fulgur::Error with a message that
// names the file/field/value and what was expected. Hot paths never throw (debug asserts only).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace fulgur {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Concatenates any streamable values: cat("tensor '", name, "' has ", n, " dims").
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

}  // namespace fulgur

// Throws fulgur::Error built from the remaining arguments when cond is false.
#define FULGUR_CHECK(cond, ...)              \
  do {                                       \
    if (!(cond)) ::fulgur::fail(__VA_ARGS__); \
  } while (0)
