// The progress line of commands that write a GGUF file tensor by tensor (`fulgur convert`,
// `fulgur standin`): "LABEL: [####......] 3/68 tensors, 1.2/6.3 MB" redrawn in place on stderr
// when `on` (callers turn it on for a terminal only), nothing otherwise.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace fulgur {

struct Progress {
  const char* label = "convert";
  bool on = false;
  size_t n_tensors = 0;
  size_t done = 0;
  uint64_t bytes = 0;
  uint64_t total = 0;

  void tensor_done(uint64_t nbytes) {
    ++done;
    bytes += nbytes;
    if (!on) return;
    constexpr int kWidth = 30;
    const int filled = total ? static_cast<int>(kWidth * bytes / total) : kWidth;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s: [%s] %zu/%zu tensors, %.1f/%.1f MB", label, bar.c_str(), done, n_tensors,
                 bytes / 1e6, total / 1e6);
    if (done == n_tensors) std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  // After a failed write: end the half-drawn line.
  void abandon() const {
    if (on && done < n_tensors) std::fputc('\n', stderr);
  }
};

}  // namespace fulgur
