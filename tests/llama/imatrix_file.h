// Importance matrices for the llama.cpp cross-checks, in both of llama.cpp's formats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fulgur::test {

struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;  // ggml order
};

// An importance matrix for the matrices among `tensors` (2-D and 3-D, not norms, routers or
// token_embd): seeded values in [0.1, 10] per column (per expert), written in llama.cpp's legacy
// format to `dat` and (unless `gguf` is empty) in its GGUF format to `gguf`, with 10 calls /
// counts so both normalise to the same values. A file that cannot be written fails the test.
void write_imatrix(const std::vector<NamedShape>& tensors, const std::string& dat, const std::string& gguf);

}  // namespace fulgur::test
