// A model's packed weights (kernels/packed.h) kept in a file, so a later load maps them instead
// of repacking: FULGUR_TILE_CACHE=DIR. Repacking a 4b Q8_0 file costs seconds per load (page
// faults on the GGUF, zeroing fresh memory, the shuffle itself); a cache file in the page cache
// maps in milliseconds.
//
// File DIR/<gguf name>.<hash of its absolute path>.tiles: the magic "FULGURTC", a u64 key
// length, the key, then each matrix's tiles at a 4096-byte aligned offset, in key order. The key
// names the source exactly (absolute path, size, mtime in ns, inode, device), the tile format
// version and every matrix (type, rows, cols, packed bytes), so any change to the GGUF or to a
// layout gives another key; a file whose key or size does not match is ignored and rewritten.
// Files are written under a temporary name and renamed: a reader never sees half a file, and a
// cache that cannot be written costs a warning, never the load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "kernels/matmul.h"

namespace fulgur {

class TileCache {
 public:
  // The cache of the GGUF at source_path (which must exist) for these row-major matrices, in the
  // order they are packed. Throws fulgur::Error only if the source cannot be stat'ed.
  TileCache(const std::string& dir, const std::string& source_path,
            const std::vector<const kernels::WeightView*>& matrices);

  const std::string& path() const { return path_; }
  // Maps the file if it holds exactly these matrices; false (saying why at info level) if it
  // is missing, stale or damaged.
  bool open();
  // Matrix i's tiles in the mapped file (after open() returned true).
  const uint8_t* tiles(size_t i) const { return map_.data() + offsets_[i]; }
  // Writes the file from the packed matrices (data[i]: bytes_[i] bytes each); best effort.
  void write(const std::vector<const uint8_t*>& data) const;

 private:
  std::string dir_, path_, key_;
  std::vector<size_t> bytes_, offsets_;
  size_t total_ = 0;
  MappedFile map_;
};

}  // namespace fulgur
