// MXFP4 weights as OpenAI's released gpt-oss checkpoints store them (transformers' Mxfp4
// quantizer, config.json "quantization_config": {"quant_method": "mxfp4", ...}), read bit for bit
// into ggml's MXFP4 blocks.
//
// The format (transformers integrations/mxfp4.py convert_moe_packed_tensors, and llama.cpp's
// converter, conversion/gpt_oss.py, read for the facts only): a weight X of logical shape
// [..., rows, cols] (cols a multiple of 32; for gpt-oss's experts [N, out, in], unlike their float
// form [N, in, out]) is stored as two U8 tensors
//   X_blocks  [..., rows, cols/32, 16]  32 E2M1 codes per block, two per byte: element 2i in the
//                                       low nibble of byte i, 2i+1 in the high nibble; a code is
//                                       sign (bit 3) | index into {0, 0.5, 1, 1.5, 2, 3, 4, 6}
//   X_scales  [..., rows, cols/32]      one E8M0 exponent per block: value = code * 2^(scale - 127)
// ggml's MXFP4 block (block_mxfp4: the E8M0 byte, then 16 bytes in which byte j carries element
// j in its low nibble and element j + 16 in its high one; ggml doubles the code values and halves
// the scale, 2^(e - 128)) holds the same values with the same code and scale bits: only the
// nibbles move, as llama.cpp's converter's transform_nibble_layout moves them.
#pragma once

#include <cstdint>

namespace fulgur {

// One row of `cols` elements (cols % 32 == 0): blocks [cols/2] bytes, scales [cols/32] bytes ->
// out [cols/32 * 17] bytes of ggml MXFP4 blocks.
void repack_mxfp4_row(const uint8_t* blocks, const uint8_t* scales, int64_t cols, uint8_t* out);

// Elements [e0, e0 + n) of a weight in this format (row-major over its logical shape) as floats:
// element e's code is nibble e % 2 of blocks[e / 2], its scale scales[e / 32].
void dequantize_mxfp4_checkpoint(const uint8_t* blocks, const uint8_t* scales, int64_t e0, int64_t n, float* out);

}  // namespace fulgur
