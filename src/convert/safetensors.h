// Reading Hugging Face safetensors checkpoints in place (mmap), validated
// (reference/archs-gguf.md §6.1):
//   u64 LE header length N | N bytes of JSON (may be space-padded) | byte buffer.
// The JSON maps tensor names to {"dtype", "shape", "data_offsets": [begin, end)} with offsets
// relative to the buffer, plus an optional "__metadata__" string->string map. Shapes are HF
// order (outermost first); data is little-endian, row-major. Every check names the file and
// the tensor. Holes between tensors are tolerated (harmless); overlaps are not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"

namespace fulgur {

enum class SafetensorsDType : uint8_t {
  kBool,
  kU8,
  kI8,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
  kC64,
  kF8_E4M3,
  kF8_E5M2,
  kF8_E8M0,
  kF8_E4M3FNUZ,
  kF8_E5M2FNUZ,
  kF4,
  kF6_E2M3,
  kF6_E3M2,
};

// The header spelling ("F32", "BF16", "F8_E4M3", ...).
std::string_view safetensors_dtype_name(SafetensorsDType type);
std::optional<SafetensorsDType> parse_safetensors_dtype(std::string_view name);
// Bits per element (4 and 6 for the sub-byte float types).
int safetensors_dtype_bits(SafetensorsDType type);
// Whether to_f32() can convert it (everything except C64, F4, F6_*, and the FNUZ f8 types).
bool safetensors_dtype_to_f32_supported(SafetensorsDType type);

struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape;  // HF order, outermost first; empty = scalar
  const uint8_t* data;         // into the mapped file; not aligned in general
  size_t bytes;
  std::string file;            // the .safetensors file it lives in (for error messages)

  int64_t n_elements() const;
};

// Converts n elements of `type` starting at `src` (unaligned, little-endian) into dst.
// Throws fulgur::Error for types without an f32 meaning (see above); `what` names the source.
void safetensors_to_f32(SafetensorsDType type, const uint8_t* src, size_t n, float* dst,
                        std::string_view what);

class SafetensorsFile {
 public:
  // The 100 MB header cap of the reference implementation: a larger N is a corrupt file.
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

  // Maps and validates the whole header. Throws fulgur::Error naming the path (and tensor).
  explicit SafetensorsFile(const std::string& path);
  // The same over bytes already in memory (not copied: they must outlive the object); `name`
  // stands for the path in messages. Used by the fuzzer.
  SafetensorsFile(const uint8_t* data, size_t size, std::string name);

  const std::string& path() const { return name_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Tensors in ascending data-offset order (the file's physical order).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // nullptr when absent.
  const SafetensorsTensor* find(std::string_view name) const;
  // Throws fulgur::Error naming the file when absent.
  const SafetensorsTensor& tensor(std::string_view name) const;
  size_t header_bytes() const { return header_bytes_; }

 private:
  void parse(const uint8_t* data, size_t size);

  MappedFile file_;   // empty when constructed over memory
  std::string name_;  // the path, or the name given for memory
  size_t header_bytes_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
};

// A whole checkpoint: one file, a sharded set (model.safetensors.index.json, whose weight_map
// is authoritative), or a directory holding either. Tensors stay in the mapped files.
class Checkpoint {
 public:
  // `path` is a directory, a .safetensors file or a *.safetensors.index.json file.
  // A directory is resolved as: model.safetensors.index.json if present, else
  // model.safetensors, else every *.safetensors in it (names must then be unique).
  explicit Checkpoint(const std::string& path);
  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;

  // The directory the checkpoint lives in (where config.json is expected).
  const std::string& dir() const { return dir_; }
  // Sorted tensor names.
  std::vector<std::string> names() const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const SafetensorsTensor* find(std::string_view name) const;
  // Throws fulgur::Error naming the checkpoint and the tensor when absent.
  const SafetensorsTensor& tensor(std::string_view name) const;
  // The tensor converted to f32 (row-major, HF shape).
  std::vector<float> to_f32(std::string_view name) const;
  // Into a caller buffer of exactly n_elements() floats.
  void to_f32(std::string_view name, std::span<float> out) const;
  size_t n_files() const { return files_.size(); }
  // Union of the files' __metadata__ (first file wins on a clash).
  std::map<std::string, std::string> metadata() const;

 private:
  void add_file(const std::string& path);
  std::string dir_;
  std::string source_;  // what error messages call this checkpoint
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> by_name_;
};

}  // namespace fulgur
