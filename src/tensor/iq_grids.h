// The codebooks of ggml's IQ1_S / IQ1_M, IQ2_XXS / IQ2_XS / IQ2_S and IQ3_XXS / IQ3_S types
// (format data, defined in iq_grids.cpp). A grid entry packs 8 (uint64_t) or 4 (uint32_t)
// element magnitudes, element j in byte j (little-endian); the IQ1 grid holds signed bytes
// -1, 0, 1. Plain data, so SIMD translation units may read them too.
#pragma once

#include <cstdint>

namespace fulgur {

// Sign byte of a 7-bit sign index: the 7 bits plus an eighth that makes the count of set bits
// even (8 elements, bit j set = element j negative).
extern const uint8_t kIq2SignBytes[128];
extern const uint64_t kIq2xxsGrid[256];  // magnitudes 8, 25, 43
extern const uint64_t kIq2xsGrid[512];   // magnitudes 8, 25, 43
extern const uint64_t kIq2sGrid[1024];   // magnitudes 8, 25, 43
extern const uint32_t kIq3xxsGrid[256];  // magnitudes 4 .. 62
extern const uint32_t kIq3sGrid[512];    // magnitudes 1, 3, .. 15
extern const uint64_t kIq1sGrid[2048];   // signed bytes -1, 0, 1 (IQ1_S and IQ1_M)

}  // namespace fulgur
