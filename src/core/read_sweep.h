// Reading memory as fast as plain code can: the denominator of every "% of the read-bandwidth
// floor". bench_membw times it over a fresh buffer; `fulgur bench --floor` over the very bytes
// a decoded token reads, next to the decode, because on a shared host the bandwidth a process
// gets swings by 2x within seconds (a Zen 4 VM here read either ~33 or ~60 GB/s, nothing
// between), so only a floor measured on the same memory at the same moment is a fair one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/thread_pool.h"

namespace fulgur {

// The wrapping sum of n 64-bit words: eight independent sums keep enough loads in flight, and
// the compiler vectorizes the loop. Returned so the reads cannot be optimized away.
uint64_t sum_words(const uint64_t* p, size_t n);

// Reads every byte of `ranges` once (their 8-byte-aligned interiors; a range's ragged ends are
// at most 14 bytes) on all of the pool's threads in one job, the bytes split evenly; returns the
// wrapping sum of the words read.
uint64_t read_all(std::span<const std::span<const uint8_t>> ranges, ThreadPool& pool);

// Seconds read_all takes.
double read_seconds(std::span<const std::span<const uint8_t>> ranges, ThreadPool& pool);

}  // namespace fulgur
