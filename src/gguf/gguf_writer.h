// GGUF v3 writer. Metadata and tensor descriptions are collected first; write() then lays the
// file out (header, key/values, tensor infos, padding, data with each tensor at the next aligned
// offset) into `PATH.tmp.<pid>` and renames it to PATH only when everything succeeded, so a
// failed or interrupted conversion never leaves a truncated file under the final name.
// Tensor bytes come either from a copy held by the writer or from a callback invoked during
// write(), which lets the converter quantize a large model one tensor at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_value.h"
#include "tensor/dtype.h"

namespace fulgur {

// Receives a piece of a tensor's bytes; may be called any number of times with any sizes.
using GgufEmit = std::function<void(const void* data, size_t n)>;
// Produces one tensor's bytes through `emit`; must emit exactly the tensor's byte size in total.
// Called once per write()/to_bytes() call (so it must be repeatable if those are called twice).
using GgufTensorSource = std::function<void(const GgufEmit& emit)>;

class GgufWriter {
 public:
  // ---- metadata (written in insertion order) ----
  // Adds a key, or replaces the value of an existing key in place. Keys must be non-empty;
  // general.alignment must be a UINT32 non-zero power of two.
  void set(const std::string& key, GgufValue value);
  void set_u8(const std::string& key, uint8_t v) { set(key, GgufValue::scalar(v)); }
  void set_i8(const std::string& key, int8_t v) { set(key, GgufValue::scalar(v)); }
  void set_u16(const std::string& key, uint16_t v) { set(key, GgufValue::scalar(v)); }
  void set_i16(const std::string& key, int16_t v) { set(key, GgufValue::scalar(v)); }
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue::scalar(v)); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue::scalar(v)); }
  void set_u64(const std::string& key, uint64_t v) { set(key, GgufValue::scalar(v)); }
  void set_i64(const std::string& key, int64_t v) { set(key, GgufValue::scalar(v)); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue::scalar(v)); }
  void set_f64(const std::string& key, double v) { set(key, GgufValue::scalar(v)); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue::scalar(v)); }
  void set_string(const std::string& key, std::string v) {
    set(key, GgufValue::string(std::move(v)));
  }
  template <GgufScalar T>
  void set_array(const std::string& key, const std::vector<T>& v) {
    set(key, GgufValue::array(v));
  }
  void set_string_array(const std::string& key, std::vector<std::string> v) {
    set(key, GgufValue::string_array(std::move(v)));
  }
  // Sets general.alignment (UINT32). Without it the alignment is 32 and the key is not written.
  void set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }
  // Removes a key if present (no-op otherwise). Removing general.alignment restores 32.
  void remove(const std::string& key);
  const GgufValue* find(std::string_view key) const;
  const std::vector<GgufKv>& metadata() const { return kvs_; }
  // Copies every key/value of a reader except general.alignment (e.g. to rewrite a file).
  void copy_metadata(const GgufReader& reader);

  // ---- tensors (written in insertion order) ----
  // shape is in ggml order (ne0 = row length first), 1..4 dims, every dim > 0, ne0 a multiple of
  // the type's block size; names are 1..63 bytes and unique. bytes/nbytes must equal
  // tensor_nbytes(type, shape). The bytes are copied.
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                  const void* data, size_t nbytes);
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                  std::vector<uint8_t> bytes);
  // The bytes are produced by `source` during write().
  void add_tensor_streamed(const std::string& name, DType type, const std::vector<int64_t>& shape,
                           GgufTensorSource source);
  size_t tensor_count() const { return tensors_.size(); }
  // Bytes of a tensor of this type and shape; throws on an invalid shape (dims, block size,
  // overflow).
  static uint64_t tensor_nbytes(DType type, const std::vector<int64_t>& shape);

  // ---- output ----
  // Writes PATH.tmp.<pid>, then renames it to PATH. On any error the temporary file is removed
  // and the error (naming the path or the tensor) is rethrown.
  void write(const std::string& path) const;
  // The same bytes in memory (tests, fuzz corpus).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;  // ggml order
    uint64_t nbytes;
    std::vector<uint8_t> bytes;  // [nbytes] when copied
    GgufTensorSource source;     // when streamed
  };
  void check_new_tensor(const std::string& name, DType type,
                        const std::vector<int64_t>& shape) const;
  void serialize(const GgufEmit& out) const;

  std::vector<GgufKv> kvs_;
  std::unordered_map<std::string, size_t> kv_index_;  // key -> index in kvs_
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
};

}  // namespace fulgur
