#include "core/page_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace fulgur {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

PageBuffer::PageBuffer(size_t bytes, bool populate) : size_(bytes) {
  if (bytes == 0) return;
  // Over-map by one huge page so the used range can start on a 2 MiB boundary (a huge page
  // can only back an aligned 2 MiB range), then give the slack back.
  const size_t used = (bytes + 4095) / 4096 * 4096;
  const size_t over = used + kHugePage;
  void* p = ::mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  FULGUR_CHECK(p != MAP_FAILED, "out of memory: could not map ", bytes, " bytes");
  auto* base = static_cast<uint8_t*>(p);
  const auto addr = reinterpret_cast<uintptr_t>(base);
  data_ = reinterpret_cast<uint8_t*>((addr + kHugePage - 1) / kHugePage * kHugePage);
  const size_t head = static_cast<size_t>(data_ - base);
  const size_t tail = over - head - used;
  if (head > 0) ::munmap(base, head);
  if (tail > 0) ::munmap(data_ + used, tail);
  mapped_ = used;
  // Both are advice: without them the memory still works, in 4 KiB pages faulted on use.
  ::madvise(data_, mapped_, MADV_HUGEPAGE);
  if (populate) this->populate(0, bytes);
}

void PageBuffer::populate(size_t offset, size_t n) const {
  const size_t begin = offset / 4096 * 4096;
  const size_t end = std::min(mapped_, (offset + n + 4095) / 4096 * 4096);
  if (begin < end) ::madvise(data_ + begin, end - begin, MADV_POPULATE_WRITE);
}

PageBuffer::~PageBuffer() { release(); }

PageBuffer::PageBuffer(PageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      mapped_(std::exchange(o.mapped_, 0)),
      size_(std::exchange(o.size_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    mapped_ = std::exchange(o.mapped_, 0);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void PageBuffer::release() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
  data_ = nullptr;
  mapped_ = size_ = 0;
}

}  // namespace fulgur
