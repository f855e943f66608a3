// Large, zero-filled, writable memory straight from the kernel: an anonymous mapping aligned
// to 2 MiB and advised for transparent huge pages (the machine's default is "madvise").
// What needs it: memory read in long streams on every token (packed weights, the KV cache).
// On 4 KiB pages each page of such a stream costs a TLB miss (a two-level walk in a VM) and
// stops the hardware prefetcher at the page edge; decode attention at depth read its f16 K/V
// at ~13 GB/s that way.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fulgur {

class PageBuffer {
 public:
  PageBuffer() = default;
  // Throws fulgur::Error when the memory cannot be mapped. populate: fault every page in now
  // (one call, instead of one fault per page later).
  explicit PageBuffer(size_t bytes, bool populate = false);
  ~PageBuffer();
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  // Faults the pages of [offset, offset + n) in now (advice, like populate above); threads may
  // populate disjoint ranges at once.
  void populate(size_t offset, size_t n) const;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();

  uint8_t* data_ = nullptr;  // 2 MiB aligned
  size_t mapped_ = 0;        // bytes mapped at data_ (size_ rounded up to whole pages)
  size_t size_ = 0;
};

}  // namespace fulgur
