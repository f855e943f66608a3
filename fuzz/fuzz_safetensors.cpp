// libFuzzer target for the safetensors header reader: parses the input in place (no copy, so
// ASan sees any read past its end), then touches every tensor it hands out: its first and last
// byte and, for dtypes with an f32 meaning, the conversion of a few elements. Only
// fulgur::Error may escape; anything else (bad_alloc, length_error, a sanitizer report) is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "convert/safetensors.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fulgur::SafetensorsFile file(data, size, "fuzz.safetensors");
    volatile size_t sink = file.header_bytes() + file.metadata().size();
    for (const fulgur::SafetensorsTensor& t : file.tensors()) {
      const fulgur::SafetensorsTensor& again = file.tensor(t.name);
      sink = sink + static_cast<size_t>(again.n_elements()) + t.shape.size();
      if (t.bytes == 0) continue;
      sink = sink + t.data[0] + t.data[t.bytes - 1];  // first and last byte lie inside the input
      if (!fulgur::safetensors_dtype_to_f32_supported(t.dtype)) continue;
      float head[4];  // the first few elements converted
      const size_t n = std::min<size_t>(4, static_cast<size_t>(t.n_elements()));
      fulgur::safetensors_to_f32(t.dtype, t.data, n, head, "fuzz");
      sink = sink + static_cast<size_t>(n > 0 && head[0] == head[0]);
    }
    (void)sink;
  } catch (const fulgur::Error&) {
    // Rejected with a message: the expected outcome for malformed input.
  }
  return 0;
}
