// libFuzzer target for the GGUF reader: parses the input in place (no copy, so ASan sees any read
// past its end) and touches every metadata value and tensor info the reader hands out. Only
// fulgur::Error may escape the reader; anything else (bad_alloc, length_error, a sanitizer
// report) is a bug.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "gguf/gguf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fulgur::GgufReader reader(data, size, "fuzz.gguf");
    volatile size_t sink = reader.version() + reader.alignment() + reader.data_offset();
    for (const fulgur::GgufKv& kv : reader.metadata()) {
      sink = sink + kv.key.size() + kv.value.to_string(16).size() + kv.value.size();
      if (kv.value.is_array()) {
        for (size_t i = 0; i < kv.value.size(); ++i)
          sink = sink + kv.value.element(i).to_string().size();
        try {
          sink = sink + kv.value.get_int_array<int64_t>().size();  // Error unless integers in range
        } catch (const fulgur::Error&) {
        }
      }
      // Typed getters with the wrong type must throw Error, never misbehave.
      try {
        sink = sink + reader.get_u32(kv.key);
      } catch (const fulgur::Error&) {
      }
      try {
        sink = sink + reader.get_string(kv.key).size();
      } catch (const fulgur::Error&) {
      }
    }
    for (const fulgur::GgufTensorInfo& t : reader.tensors()) {
      const fulgur::GgufTensorInfo& again = reader.tensor(t.name);
      sink = sink + static_cast<size_t>(again.n_elements()) + t.n_dims + t.offset;
      sink = sink + t.data[0] + t.data[t.nbytes - 1];  // first and last byte lie inside the input
    }
    (void)sink;
  } catch (const fulgur::Error&) {
    // Rejected with a message: the expected outcome for malformed input.
  }
  return 0;
}
