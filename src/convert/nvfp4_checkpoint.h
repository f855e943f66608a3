// NVFP4 checkpoints in the compressed-tensors format (vLLM's llm-compressor, RedHatAI's
// "-NVFP4" exports), read bit for bit into ggml's NVFP4 blocks.
//
// Sources (neuralmagic/compressed-tensors, read for the format only):
//  * compressors/quantized_compressors/nvfp4_quantized.py (NVFP4PackedCompressor, format name
//    "nvfp4-pack-quantized"): a quantized Linear `X` is stored as
//      X.weight_packed        U8      [rows, cols/2]   two E2M1 codes per byte, element 2i in the
//                                                      low nibble, 2i+1 in the high nibble; a
//                                                      code is sign (bit 3) | index into
//                                                      {0, 0.5, 1, 1.5, 2, 3, 4, 6}
//      X.weight_scale         F8_E4M3 [rows, cols/16]  one scale per 16 consecutive elements
//      X.weight_global_scale  F32     [1]              per-tensor
//      X.input_global_scale   F32     [1]              activation quantization (not used here)
//  * quantization/lifecycle/forward.py (_dequantize with a global scale): the local scale is
//    divided by the global one, so  w = e2m1(code) * (f8_e4m3(weight_scale) / weight_global_scale).
//  * config.json "quantization_config": {"quant_method": "compressed-tensors", "format":
//    "nvfp4-pack-quantized", "config_groups": {G: {"format"?, "weights": {"num_bits": 4,
//    "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": true, ...},
//    "targets": [...]}}, "ignore": [...]}; ignored modules keep a plain `X.weight`.
//
// ggml's NVFP4 block (reference/archs-gguf.md §1.7) holds 64 elements as 4 UE4M3 sub-block scales
// and 32 bytes in which byte j of sub-block s carries element 16s+j (low nibble) and 16s+j+8 (high
// nibble), with E2M1 values doubled and the scale halved. The same codes and the same scale bits
// therefore describe the same values; only the nibbles move. The global scale becomes the
// per-tensor `.scale` sidecar that multiplies the matmul output (as llama.cpp's converter writes
// ModelOpt's weight_scale_2): `.scale` = 1 / weight_global_scale.
#pragma once

#include <cstdint>
#include <string>

#include "convert/hf_config.h"

namespace fulgur {

// What config.json says about the checkpoint's weight encoding.
struct CheckpointQuant {
  bool nvfp4 = false;  // compressed-tensors nvfp4-pack-quantized linears may be present
  bool mxfp4 = false;  // quant_method "mxfp4": X_blocks / X_scales pairs may be present
                       // (convert/mxfp4_checkpoint.h; OpenAI's gpt-oss releases)
};

// Reads config.json's quantization_config (absent = plain floats). Throws fulgur::Error naming
// the field for anything other than compressed-tensors NVFP4 weights (other quant_method, group
// format, bit width, group size, asymmetric or dynamic weights) or quant_method "mxfp4" (whose
// modules_to_not_convert is not needed: which tensors are MXFP4 is seen from their names).
CheckpointQuant parse_quantization_config(const HfConfig& cfg);

// One row of a compressed-tensors NVFP4 weight into ggml NVFP4 blocks: packed [cols/2] codes,
// scales [cols/16] E4M3 bytes -> out [cols/64 * 36] bytes. cols % 64 == 0. Throws fulgur::Error
// (starting with `what`) for a NaN or negative scale, which ggml's unsigned scale cannot hold.
void repack_nvfp4_row(const uint8_t* packed, const uint8_t* scales, int64_t cols, uint8_t* out,
                      const std::string& what);

// Elements [e0, e0 + n) of a weight (row-major over [rows][cols], cols % 16 == 0) as floats, by
// the format's definition, e2m1 * (e4m3 / global): packed [rows*cols/2], scales [rows*cols/16].
// Element e's code is nibble e % 2 of packed[e / 2] and its scale is scales[e / 16].
void dequantize_nvfp4_checkpoint(const uint8_t* packed, const uint8_t* scales, float global_scale,
                                 int64_t e0, int64_t n, float* out, const std::string& what);

}  // namespace fulgur
