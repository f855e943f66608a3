// GGUF reader (reference/archs-gguf.md §1.1-1.6). The whole file is validated in the constructor
// before anything is handed out: header, counts against the bytes that remain, every string and
// array length, value types, duplicate keys and tensor names, general.alignment, tensor shapes
// and types, and that tensor data is aligned, inside the file and non-overlapping. Any violation
// throws fulgur::Error naming the file, the field and the values. Tensor data stays in the memory
// map (or the caller's buffer) and is never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "gguf/gguf_value.h"
#include "tensor/dtype.h"

namespace fulgur {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kGgufVersion = 3;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;
inline constexpr size_t kGgufMaxTensorName = 63;  // ggml's GGML_MAX_NAME (64) minus the NUL

struct GgufKv {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  DType type = DType::kF32;
  int64_t ne[kGgufMaxDims] = {1, 1, 1, 1};  // ggml order: ne[0] is the contiguous row length
  uint32_t n_dims = 0;                      // 1..4; ne[i] == 1 for i >= n_dims
  uint64_t offset = 0;                      // bytes from the start of the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // [nbytes] inside the file's mapping / the reader's buffer

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  // Shape as a vector of n_dims entries (ggml order).
  std::vector<int64_t> shape() const { return {ne, ne + n_dims}; }
};

class GgufReader {
 public:
  // Maps and validates a file.
  explicit GgufReader(const std::string& path);
  // Validates a caller-owned buffer that must outlive the reader (no copy: the fuzzer uses this so
  // that ASan sees reads past the input). `name` appears in error messages.
  GgufReader(const uint8_t* data, size_t size, std::string name = {});
  // Takes ownership of an in-memory file.
  explicit GgufReader(std::vector<uint8_t> bytes, std::string name = {});

  GgufReader(GgufReader&&) noexcept = default;
  GgufReader& operator=(GgufReader&&) noexcept = default;
  GgufReader(const GgufReader&) = delete;
  GgufReader& operator=(const GgufReader&) = delete;

  // Path or buffer name given at construction (may be empty).
  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Absolute file offset of the data section (tensor offsets are relative to it).
  uint64_t data_offset() const { return data_offset_; }
  const uint8_t* file_data() const { return data_; }
  size_t file_size() const { return size_; }
  // Whether the reader maps a file (name() is then its path), rather than holding a buffer.
  bool is_mapped_file() const { return file_ != nullptr; }
  // MappedFile::drop_pages when reading a mapped file; nothing for an in-memory one.
  void drop_pages(const void* p, size_t n) const {
    if (file_) file_->drop_pages(p, n);
  }

  // ---- metadata, in file order ----
  const std::vector<GgufKv>& metadata() const { return kvs_; }
  // nullptr when the key is absent.
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Throws "<file>: missing key '<key>'" when absent.
  const GgufValue& get(std::string_view key) const;

  // Exactly type T (no conversion), e.g. get<uint8_t>("x").
  template <GgufScalar T>
  T get(std::string_view key) const {
    return get(key).get<T>(what(key));
  }
  // Integer getters accept any integer value type and check that the value fits.
  template <GgufInteger T>
  T get_int(std::string_view key) const {
    return get(key).get_int<T>(what(key));
  }
  template <GgufInteger T>
  T get_int(std::string_view key, T fallback) const {
    const GgufValue* v = find(key);
    return v != nullptr ? v->get_int<T>(what(key)) : fallback;
  }
  template <GgufInteger T>
  std::optional<T> find_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    return v->get_int<T>(what(key));
  }
  uint32_t get_u32(std::string_view key) const { return get_int<uint32_t>(key); }
  uint32_t get_u32(std::string_view key, uint32_t fallback) const {
    return get_int<uint32_t>(key, fallback);
  }
  int32_t get_i32(std::string_view key) const { return get_int<int32_t>(key); }
  int32_t get_i32(std::string_view key, int32_t fallback) const {
    return get_int<int32_t>(key, fallback);
  }
  uint64_t get_u64(std::string_view key) const { return get_int<uint64_t>(key); }
  uint64_t get_u64(std::string_view key, uint64_t fallback) const {
    return get_int<uint64_t>(key, fallback);
  }
  int64_t get_i64(std::string_view key) const { return get_int<int64_t>(key); }
  int64_t get_i64(std::string_view key, int64_t fallback) const {
    return get_int<int64_t>(key, fallback);
  }
  // FLOAT32 or FLOAT64 values.
  float get_f32(std::string_view key) const;
  float get_f32(std::string_view key, float fallback) const;
  double get_f64(std::string_view key) const;
  double get_f64(std::string_view key, double fallback) const;
  const std::string& get_string(std::string_view key) const;
  std::string get_string(std::string_view key, const std::string& fallback) const;
  bool get_bool(std::string_view key) const;
  bool get_bool(std::string_view key, bool fallback) const;

  // Array whose element type is exactly T (e.g. float for tokenizer.ggml.scores).
  template <GgufScalar T>
  std::vector<T> get_array(std::string_view key) const {
    return get(key).get_array<T>(what(key));
  }
  // Array of any integer element type; each element must fit T.
  template <GgufInteger T>
  std::vector<T> get_int_array(std::string_view key) const {
    return get(key).get_int_array<T>(what(key));
  }
  const std::vector<std::string>& get_string_array(std::string_view key) const;

  // ---- tensors, in file order ----
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // Throws "<file>: missing tensor '<name>'" when absent.
  const GgufTensorInfo& tensor(std::string_view name) const;

  // "file 'x.gguf': key 'k'" — the prefix used in every message about a key.
  std::string what(std::string_view key) const;
  // "file 'x.gguf'" (or "GGUF buffer" when the reader has no name).
  std::string where() const;

 private:
  void parse();

  std::string name_;
  std::unique_ptr<MappedFile> file_;  // when reading from a path
  std::vector<uint8_t> owned_;        // when constructed from an owned buffer
  const uint8_t* data_ = nullptr;     // [size_] the whole file
  size_t size_ = 0;

  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::unordered_map<std::string, size_t> kv_index_;  // key -> index in kvs_
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
};

}  // namespace fulgur
