// ggml's quantized block layouts, byte for byte (reference/archs-gguf.md §1.7), plus the small
// decoding helpers every kernel needs. Fields named `d`, `m`, `dmin`, `s` of type uint16_t hold
// IEEE binary16 bits (little-endian, as in the file); decode them with core/fp16.h.
//
// All members are byte arrays or uint16_t/float, so the natural layout has no padding; the
// static_asserts pin the sizes to dtype.cpp's table. A block pointer into a GGUF data section is
// aligned to at least 2 bytes (tensor data is 32-aligned and every f16-bearing block has an even
// size), which is all these structs need; Q8_K (float d) only ever lives in fulgur's own buffers.
//
// The helpers are plain extern functions defined in blocks.cpp (no inline code here that an
// ISA-flagged translation unit could instantiate differently); the tables are constexpr data.
#pragma once

#include <cstdint>

namespace fulgur {

inline constexpr int kQK = 32;           // elements per legacy / IQ4_NL / MXFP4 block
inline constexpr int kQK_K = 256;        // elements per K-quant super-block
inline constexpr int kQK_NVFP4 = 64;     // elements per NVFP4 block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales of Q3_K/Q4_K/Q5_K

// x[j] = d * ((qs[j] & 15) - 8), x[j+16] = d * ((qs[j] >> 4) - 8), j < 16.
struct BlockQ4_0 {
  uint16_t d;           // f16 scale
  uint8_t qs[kQK / 2];  // [16] nibbles: low = elements 0..15, high = 16..31
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_0 nibble order, x = d * q + m, q in 0..15.
struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 offset (the block minimum)
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// 5-bit: qh (an LE u32) bit j is bit 4 of element j (j < 32); x = d * (q - 16).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_0 bit placement, x = d * q + m, q in 0..31.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// x[j] = d * qs[j].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Activation format: x[j] = d * qs[j]; s = d * sum(qs) (f16), precomputed for Q4_1/Q5_1 dots.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_1) == 36);

// 16 groups of 16; scales[g] = scale (low nibble) | min (high nibble);
// x = d * sc * q - dmin * m, q in 0..3 (element order: see quants_k.cpp).
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // [16]
  uint8_t qs[kQK_K / 4];       // [64] 2-bit quants
  uint16_t d;                  // f16 super-scale of the scales
  uint16_t dmin;               // f16 super-scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 groups of 16 with signed 6-bit scales (unpack_q3_k_scales); x = d * s * (q - 4 * !hbit),
// q = the 2 low bits, hbit from hmask.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];      // [32] high bits
  uint8_t qs[kQK_K / 4];         // [64] low 2 bits
  uint8_t scales[kKScaleBytes];  // [12] 16 x 6-bit, biased by 32
  uint16_t d;                    // f16
};
static_assert(sizeof(BlockQ3_K) == 110);

// 8 sub-blocks of 32 with 6-bit scale and min (get_scale_min_k4);
// x = d * sc * q - dmin * m, q in 0..15.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];  // [12]
  uint8_t qs[kQK_K / 2];         // [128]
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q4_K plus a fifth bit per element from qh; q in 0..31.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];  // [12]
  uint8_t qh[kQK_K / 8];         // [32]
  uint8_t qs[kQK_K / 2];         // [128]
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 groups of 16 with int8 scales; x = d * sc * (q - 32), q in 0..63. Note d is LAST.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // [128] low 4 bits
  uint8_t qh[kQK_K / 4];      // [64] high 2 bits
  int8_t scales[kQK_K / 16];  // [16]
  uint16_t d;                 // f16
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activation format for K-quant dot products: x = d * qs; bsums[g] = sum of qs[16g..16g+15].
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];           // [256]
  int16_t bsums[kQK_K / 16];  // [16]
};
static_assert(sizeof(BlockQ8_K) == 292);

// Q4_0 nibble order; x = d * kIq4nlValues[nibble].
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// 8 sub-blocks of 32 with 6-bit scales: ls = nibble (ib % 2) of scales_l[ib / 2] | bits 2ib..2ib+1
// of scales_h << 4; sub-block ib decodes like IQ4_NL with scale d * (ls - 32).
struct BlockIQ4_XS {
  uint16_t d;                    // f16
  uint16_t scales_h;             // high 2 bits of the 8 scales
  uint8_t scales_l[kQK_K / 64];  // [4] low 4 bits, two scales per byte
  uint8_t qs[kQK_K / 2];         // [128] each 16-byte run is one sub-block in IQ4_NL nibble order
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// OCP MX FP4: x[j] = kMxfp4Values[qs[j] & 15] * e8m0_to_f32_half(e), x[j+16] from the high nibble.
struct BlockMXFP4 {
  uint8_t e;            // E8M0 shared exponent
  uint8_t qs[kQK / 2];  // [16]
};
static_assert(sizeof(BlockMXFP4) == 17);

// NVIDIA FP4: 4 sub-blocks of 16, each with a UE4M3 scale. Sub-block s, j < 8:
// x[16s + j] = kMxfp4Values[qs[8s + j] & 15] * ue4m3_to_f32_half(d[s]), x[16s + j + 8] from the
// high nibble. The per-tensor `.scale` sidecar is NOT part of the row (see quants.h).
struct BlockNVFP4 {
  uint8_t d[kQK_NVFP4 / 16];  // [4] UE4M3 sub-block scales
  uint8_t qs[kQK_NVFP4 / 2];  // [32]
};
static_assert(sizeof(BlockNVFP4) == 36);

// ---- Codebook types (tensor/iq_grids.h): 256 elements = 8 sub-blocks of 32, each of 4 groups
// of 8 whose magnitudes come from one grid entry (or two 4-wide ones for IQ3) ----------------

// Sub-block ib: qs[4ib .. 4ib+1] as bytes are the 4 grid indices, qs[4ib+2..4ib+3] as an LE
// u32 `a` holds 4 x 7-bit sign indices (bits 7l..7l+6) and the 4-bit scale (a >> 28);
// x = d * (0.5 + scale) * 0.25 * grid * sign.
struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[kQK_K / 8];  // [32]
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

// qs[4ib + l]: bits 0-8 grid index (of 512), bits 9-15 sign index; scales[ib]: low nibble for
// the sub-block's first 16 elements, high nibble for the last 16; x as IQ2_XXS.
struct BlockIQ2_XS {
  uint16_t d;
  uint16_t qs[kQK_K / 8];       // [32]
  uint8_t scales[kQK_K / 32];   // [8]
};
static_assert(sizeof(BlockIQ2_XS) == 74);

// qs[0..31]: low 8 bits of the grid indices (of 1024), qh[ib] bits 2l..2l+1 their top bits;
// qs[32..63]: one explicit sign byte per group of 8; scales as IQ2_XS.
struct BlockIQ2_S {
  uint16_t d;
  uint8_t qs[kQK_K / 4];       // [64]
  uint8_t qh[kQK_K / 32];      // [8]
  uint8_t scales[kQK_K / 32];  // [8]
};
static_assert(sizeof(BlockIQ2_S) == 82);

// qs[0..63]: 8 grid indices (of 256, 4 elements each) per sub-block; qs[64 + 4ib ..] an LE u32
// of sign indices and scale as IQ2_XXS; x = d * (0.5 + scale) * 0.5 * grid * sign.
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[3 * kQK_K / 8];  // [96]
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

// qs: low 8 bits of 8 grid indices (of 512) per sub-block, qh[ib] bit k their ninth bit;
// signs: one byte per group of 8; scales: a nibble per sub-block (low = even ib),
// x = d * (1 + 2 * scale) * grid * sign.
struct BlockIQ3_S {
  uint16_t d;
  uint8_t qs[kQK_K / 4];      // [64]
  uint8_t qh[kQK_K / 32];     // [8]
  uint8_t signs[kQK_K / 8];   // [32]
  uint8_t scales[kQK_K / 64]; // [4]
};
static_assert(sizeof(BlockIQ3_S) == 110);

// Sub-block ib: grid index l = qs[4ib + l] | bits 3l..3l+2 of qh[ib] << 8 (of 2048); qh bits
// 12-14 the scale s, bit 15 the sign of the shift; x = d * (2s + 1) * (grid +- 0.125).
struct BlockIQ1_S {
  uint16_t d;
  uint8_t qs[kQK_K / 8];     // [32]
  uint16_t qh[kQK_K / 32];   // [8]
};
static_assert(sizeof(BlockIQ1_S) == 50);

// As IQ1_S per group of 8, with the index's top 3 bits and the shift's sign in a nibble of qh
// (bit 3 of the nibble), one 3-bit scale per 16 elements in `scales` (as 4 LE u16, 12 bits
// each) and the super-block's f16 d spread over the top nibbles of those u16.
struct BlockIQ1_M {
  uint8_t qs[kQK_K / 8];      // [32]
  uint8_t qh[kQK_K / 16];     // [16]
  uint8_t scales[kQK_K / 32]; // [8]
};
static_assert(sizeof(BlockIQ1_M) == 56);

// Ternary, base 3: qs[m] holds 5 trits (digit n = trit of element 32n + m for m < 32, element
// 160 + 16n + (m - 32) after), qh[j] 4 (element 240 + 4n + j); digit n of byte b is
// ((uint8_t)(b * 3^n) * 3) >> 8. x = d * (trit - 1).
struct BlockTQ1_0 {
  uint8_t qs[48];
  uint8_t qh[4];
  uint16_t d;
};
static_assert(sizeof(BlockTQ1_0) == 54);

// Ternary, 2 bits per element in the Q2_K order (element 128h + 32l + m is bits 2l..2l+1 of
// qs[32h + m]); x = d * (q - 1).
struct BlockTQ2_0 {
  uint8_t qs[kQK_K / 4];  // [64]
  uint16_t d;
};
static_assert(sizeof(BlockTQ2_0) == 66);

inline constexpr float kIq1Shift = 0.125f;  // IQ1_S / IQ1_M: the +-shift of a group's grid values

// IQ4_NL's non-uniform 4-bit codebook.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// E2M1 values times two (so they fit int8 exactly); pair with the *_half scale decoders.
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// Q4_K/Q5_K: 6-bit scale *sc and min *m of sub-block j (0..7) from the 12 packed bytes.
void get_scale_min_k4(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m);
// Inverse of get_scale_min_k4 for all 8 sub-blocks: sc[j], m[j] in 0..63 -> 12 bytes.
void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* scales);
// Q3_K: the 16 signed scales (-32..31) from the 12 packed bytes.
void unpack_q3_k_scales(const uint8_t* scales, int8_t* out);
// Inverse of unpack_q3_k_scales: 16 signed scales in -32..31 -> 12 bytes.
void pack_q3_k_scales(const int8_t* in, uint8_t* scales);

// E8M0 -> 2^(e-127) (e = 0 gives 2^-127, a subnormal; e = 255 gives inf, as ggml).
float e8m0_to_f32(uint8_t e);
// E8M0 -> 2^(e-128): the MXFP4 block scale to use with the doubled kMxfp4Values.
float e8m0_to_f32_half(uint8_t e);
// Unsigned E4M3 -> float: 0x00 and 0x7F give 0; bit 7 is ignored otherwise; exp == 0 is
// subnormal (man * 2^-9); max 0x7E = 448.
float ue4m3_to_f32(uint8_t x);
// ue4m3_to_f32(x) * 0.5: the NVFP4 sub-block scale to use with the doubled kMxfp4Values.
float ue4m3_to_f32_half(uint8_t x);

}  // namespace fulgur
