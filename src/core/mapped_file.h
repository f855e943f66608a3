// A read-only memory map of a whole file (weights are used in place, never copied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fulgur {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws fulgur::Error naming the path and the system error.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Gives back the resident pages wholly inside [p, p + n) (madvise DONTNEED): for bytes that
  // were copied elsewhere (packed weights), so they do not count twice in the process's memory.
  // Touching them again re-reads the file; p outside the mapping is ignored.
  void drop_pages(const void* p, size_t n) const;

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fulgur
