// Writing safetensors files (used by `fulgur synth --hf` to emit Hugging Face checkpoints and by
// the tests). The writer owns a copy of every tensor's bytes; files are written to a temporary
// name next to the target and renamed, so a reader never sees a half-written file.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "convert/safetensors.h"

namespace fulgur {

class SafetensorsWriter {
 public:
  // Starts with __metadata__ {"format": "pt"}, which transformers requires to load a file.
  SafetensorsWriter();

  void set_metadata(const std::string& key, const std::string& value);
  // Raw little-endian bytes; their size must be product(shape) * dtype size.
  void add(const std::string& name, SafetensorsDType dtype, std::vector<int64_t> shape,
           std::span<const uint8_t> bytes);
  // f32 values stored as F32, F16 or BF16 (round to nearest even).
  void add_f32(const std::string& name, std::vector<int64_t> shape, std::span<const float> values,
               SafetensorsDType store = SafetensorsDType::kF32);

  size_t n_tensors() const { return entries_.size(); }
  // Bytes of tensor data (what an index's metadata.total_size counts).
  uint64_t data_bytes() const;
  // Data is laid out by descending element size, then name, so every tensor is aligned to its
  // element size given the 8-aligned start of the buffer (the header is space-padded to it).
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    SafetensorsDType dtype;
    std::vector<int64_t> shape;  // HF order
    std::vector<uint8_t> bytes;  // [product(shape) * dtype size]
  };
  std::map<std::string, std::string> metadata_;
  std::vector<Entry> entries_;
  std::set<std::string> names_;
};

// Writes model.safetensors.index.json-style content: {"metadata": {"total_size": N},
// "weight_map": {tensor: shard file name}} (atomically, like the writer).
void write_safetensors_index(const std::string& path,
                             const std::map<std::string, std::string>& weight_map,
                             uint64_t total_size);

// Writes bytes to `path` via a temporary file in the same directory and a rename.
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace fulgur
