// gpt-oss checkpoints in the form OpenAI released them, made from a float one (`fulgur synth
// --arch gpt-oss --hf`): the experts' weights as MXFP4 X_blocks / X_scales (U8) of the out x in
// matrices, config.json's quantization_config {"quant_method": "mxfp4"}, the rest unchanged. The
// encoding is written here from the format's definition (transformers' convert_moe_packed_tensors:
// element 2i in the low nibble of byte i, 2i+1 in the high one; value = E2M1 code * 2^(scale -
// 127)), independently of the converter's repacking, with codes and scales from fulgur's MXFP4
// quantizer (ggml's block_mxfp4: byte j of a block carries element j low, j + 16 high).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "tensor/quants.h"

namespace fulgur::test {

// One expert weight of the float form [N, in, out] rounded to MXFP4 along `in`, in three forms.
struct Mxfp4Expert {
  std::vector<float> exact;     // the float form [N, in, out], every value MXFP4-rounded
  std::vector<uint8_t> blocks;  // released X_blocks [N, out, in/32, 16]
  std::vector<uint8_t> scales;  // released X_scales [N, out, in/32]
  std::vector<uint8_t> ggml;    // ggml MXFP4 rows of [N, out, in] (in/32 blocks of 17 bytes each)
};

inline Mxfp4Expert mxfp4_expert(const std::vector<float>& w, int64_t N, int64_t in, int64_t out) {
  const int64_t nb = in / 32;
  Mxfp4Expert e;
  e.exact.resize(w.size());
  e.blocks.assign(static_cast<size_t>(N * out * nb * 16), 0);
  e.scales.resize(static_cast<size_t>(N * out * nb));
  e.ggml.resize(static_cast<size_t>(N * out * nb * 17));
  std::vector<float> row(static_cast<size_t>(in)), back(static_cast<size_t>(in));
  for (int64_t j = 0; j < N; ++j) {
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) row[i] = w[(j * in + i) * out + o];
      const int64_t r = j * out + o;  // row of the out x in form
      uint8_t* g = e.ggml.data() + r * nb * 17;
      quantize_row(DType::kMXFP4, row.data(), g, in);
      dequantize_row(DType::kMXFP4, g, back.data(), in);
      for (int64_t i = 0; i < in; ++i) e.exact[(j * in + i) * out + o] = back[i];
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = g + b * 17;
        e.scales[r * nb + b] = blk[0];
        for (int k = 0; k < 32; ++k) {
          const int code = k < 16 ? blk[1 + k] & 0xF : blk[1 + k - 16] >> 4;
          e.blocks[(r * nb + b) * 16 + k / 2] |= static_cast<uint8_t>(code << (4 * (k % 2)));
        }
      }
    }
  }
  return e;
}

inline bool is_expert_weight(const std::string& name) {
  return name.ends_with("mlp.experts.gate_up_proj") || name.ends_with("mlp.experts.down_proj");
}

// A copy of HF folder `from` as `to` with model.safetensors holding `write`'s tensors and
// config.json edited by `edit`.
template <class Write, class Edit>
void rewrite_checkpoint(const std::string& from, const std::string& to, Write write, Edit edit) {
  std::filesystem::remove_all(to);
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  SafetensorsWriter w;
  {
    const Checkpoint ck(to);
    write(ck, w);
  }
  w.write(to + "/model.safetensors");
  nlohmann::json c = HfConfig::load(to).json();
  edit(c);
  write_json_file(to + "/config.json", c);
}

// Writes the float gpt-oss checkpoint `hf` (one model.safetensors) again as `exact_dir`, its
// experts' weights rounded to MXFP4, and as `mxfp4_dir`, the same values in the released form.
// Returns the experts by checkpoint name (X, not X_blocks).
inline std::map<std::string, Mxfp4Expert> write_gpt_oss_release_forms(const std::string& hf, const std::string& exact_dir,
                                                                      const std::string& mxfp4_dir) {
  std::map<std::string, Mxfp4Expert> experts;
  {
    const Checkpoint ck(hf);
    for (const std::string& n : ck.names()) {
      if (!is_expert_weight(n)) continue;
      const std::vector<int64_t>& s = ck.tensor(n).shape;  // [N, in, out]
      experts[n] = mxfp4_expert(ck.to_f32(n), s[0], s[1], s[2]);
    }
  }
  rewrite_checkpoint(
      hf, exact_dir,
      [&](const Checkpoint& ck, SafetensorsWriter& w) {
        for (const std::string& n : ck.names()) {
          w.add_f32(n, ck.tensor(n).shape, is_expert_weight(n) ? experts.at(n).exact : ck.to_f32(n));
        }
      },
      [](nlohmann::json&) {});
  rewrite_checkpoint(
      hf, mxfp4_dir,
      [&](const Checkpoint& ck, SafetensorsWriter& w) {
        for (const std::string& n : ck.names()) {
          const std::vector<int64_t>& s = ck.tensor(n).shape;
          if (!is_expert_weight(n)) {
            w.add_f32(n, s, ck.to_f32(n));
            continue;
          }
          const Mxfp4Expert& e = experts.at(n);
          w.add(n + "_blocks", SafetensorsDType::kU8, {s[0], s[2], s[1] / 32, 16}, e.blocks);
          w.add(n + "_scales", SafetensorsDType::kU8, {s[0], s[2], s[1] / 32}, e.scales);
        }
      },
      [](nlohmann::json& c) {
        // openai/gpt-oss-20b's config.json
        c["quantization_config"] = {{"modules_to_not_convert",
                                     {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                      "lm_head"}},
                                    {"quant_method", "mxfp4"}};
      });
  return experts;
}

}  // namespace fulgur::test
