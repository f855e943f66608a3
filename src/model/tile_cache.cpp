#include "model/tile_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "kernels/packed.h"
#include "tensor/dtype.h"

namespace fulgur {
namespace {

constexpr char kMagic[8] = {'F', 'U', 'L', 'G', 'U', 'R', 'T', 'C'};
constexpr size_t kAlign = 4096;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

TileCache::TileCache(const std::string& dir, const std::string& source_path,
                     const std::vector<const kernels::WeightView*>& matrices)
    : dir_(dir) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(source_path, ec).lexically_normal().string();
  struct stat st {};
  FULGUR_CHECK(::stat(source_path.c_str(), &st) == 0, "tile cache: cannot stat '", source_path,
               "': ", std::strerror(errno));
  key_ = "fulgur tiles " + std::to_string(kernels::kTileFormatVersion) + "\nsource " + abs +
         "\nsize " + std::to_string(st.st_size) + " mtime " +
         std::to_string(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec) +
         " inode " + std::to_string(st.st_ino) + " device " + std::to_string(st.st_dev) + "\n";
  for (const kernels::WeightView* m : matrices) {
    bytes_.push_back(kernels::packed_bytes(*m));
    key_ += std::string(dtype_name(m->type)) + " " + std::to_string(m->rows) + " x " +
            std::to_string(m->cols) + " " + std::to_string(bytes_.back()) + "\n";
  }
  size_t offset = align_up(sizeof kMagic + 8 + key_.size());
  for (size_t b : bytes_) {
    offsets_.push_back(offset);
    offset = align_up(offset + b);
  }
  total_ = offset;
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(abs)));
  path_ = (std::filesystem::path(dir) /
           (std::filesystem::path(abs).filename().string() + "." + hash + ".tiles"))
              .string();
}

bool TileCache::open() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    log_info("tile cache: no ", path_, " yet");
    return false;
  }
  if (static_cast<size_t>(st.st_size) != total_) {
    log_info("tile cache: ", path_, " has ", st.st_size, " bytes, expected ", total_, ": repacking");
    return false;
  }
  try {
    map_ = MappedFile(path_);
  } catch (const Error& e) {
    log_info("tile cache: ", e.what(), ": repacking");
    return false;
  }
  uint64_t key_len = 0;
  std::memcpy(&key_len, map_.data() + sizeof kMagic, 8);
  const bool same = std::memcmp(map_.data(), kMagic, sizeof kMagic) == 0 && key_len == key_.size() &&
                    std::memcmp(map_.data() + sizeof kMagic + 8, key_.data(), key_.size()) == 0;
  if (!same) {
    log_info("tile cache: ", path_, " was made from another file or layout: repacking");
    map_ = MappedFile();
    return false;
  }
  // Large folios of the page cache map as huge pages where the kernel can (fewer TLB misses
  // in the decode stream); advice only.
  ::madvise(const_cast<uint8_t*>(map_.data()), map_.size(), MADV_HUGEPAGE);
  return true;
}

void TileCache::write(const std::vector<const uint8_t*>& data) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  // The blocks are reserved before the mapping is written: a sparse file (ftruncate) on a full
  // disk lets the stores below die of SIGBUS instead of failing here.
  bool ok = fd >= 0;
  if (ok) {
    const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(total_));
    ok = err == 0;
    if (!ok) errno = err;
  }
  // Written through a shared mapping advised for huge pages, not pwrite: the page cache then
  // holds the file in 2 MiB folios that later loads map as huge pages. After pwrite it held
  // small folios, and decoding from the freshly written cache ran ~1/3 slower (TLB misses on
  // 4 KiB mappings) until the kernel happened to collapse them.
  void* m = ok ? ::mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  ok = ok && m != MAP_FAILED;
  if (ok) {
    auto* out = static_cast<uint8_t*>(m);
    ::madvise(out, total_, MADV_HUGEPAGE);
    const uint64_t key_len = key_.size();
    std::memcpy(out, kMagic, sizeof kMagic);
    std::memcpy(out + sizeof kMagic, &key_len, 8);
    std::memcpy(out + sizeof kMagic + 8, key_.data(), key_.size());
    for (size_t i = 0; i < data.size(); ++i) std::memcpy(out + offsets_[i], data[i], bytes_[i]);
    // On disk before the rename: a crash must not leave a complete-looking cache whose tiles
    // never reached the disk (zeros would load as weights).
    ok = ::msync(out, total_, MS_SYNC) == 0;
    ::munmap(out, total_);
  }
  if (fd >= 0) {
    const int err = errno;
    ok = (::close(fd) == 0) && ok;
    errno = err;
  }
  if (ok && ::rename(tmp.c_str(), path_.c_str()) == 0) {
    log_info("tile cache: wrote ", path_, " (", total_ >> 20, " MiB)");
    return;
  }
  log_warn("tile cache: cannot write ", path_, ": ", std::strerror(errno), " (the model loads anyway)");
  ::unlink(tmp.c_str());
}

}  // namespace fulgur
