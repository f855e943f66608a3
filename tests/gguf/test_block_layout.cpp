// The block layout of hybrid / MTP files: trunk kinds from full_attention_interval, MTP blocks
// counted in block_count, and the broken contracts (nextn_predict_layers not below block_count,
// an MTP block without its nextn tensors) as errors naming the key or tensor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/block_layout.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace fulgur {
namespace {

// A qwen35-like header (no weights but the nextn markers of the MTP blocks).
std::vector<uint8_t> file(uint32_t blocks, int nextn, uint32_t interval, bool mtp_tensors = true) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen35");
  w.set_u32("qwen35.block_count", blocks);
  if (interval > 0) w.set_u32("qwen35.full_attention_interval", interval);
  if (nextn >= 0) w.set_u32("qwen35.nextn_predict_layers", static_cast<uint32_t>(nextn));
  for (uint32_t b = blocks - (nextn > 0 && static_cast<uint32_t>(nextn) <= blocks ? nextn : 0); b < blocks; ++b) {
    for (const std::string& t : required_nextn_tensors()) {
      if (!mtp_tensors && t == "nextn.hnorm.weight") continue;
      w.add_tensor("blk." + std::to_string(b) + "." + t, DType::kF32, {4}, std::vector<uint8_t>(16, 0));
    }
  }
  w.add_tensor("token_embd.weight", DType::kF32, {4, 2}, std::vector<uint8_t>(32, 0));
  return w.to_bytes();
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    read_block_layout(GgufReader(bytes, "m.gguf"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BlockLayout, TrunkKindsAndMtpBlocks) {
  const BlockLayout l = read_block_layout(GgufReader(file(9, 1, 4), "m.gguf"));
  EXPECT_EQ(l.n_block, 9);
  EXPECT_EQ(l.n_trunk(), 8);
  using K = BlockKind;
  EXPECT_EQ(l.kinds, (std::vector<K>{K::kGatedDeltaNet, K::kGatedDeltaNet, K::kGatedDeltaNet, K::kAttention,
                                     K::kGatedDeltaNet, K::kGatedDeltaNet, K::kGatedDeltaNet, K::kAttention, K::kMtp}));
  EXPECT_EQ(describe(l), "9 blocks: trunk 0-7 (Gated DeltaNet 0-2, 4-6, attention 3, 7), MTP 8");
  const BlockLayout plain = read_block_layout(GgufReader(file(4, -1, 4), "m.gguf"));
  EXPECT_EQ(plain.n_nextn, 0);
  EXPECT_EQ(describe(plain), "4 blocks: trunk 0-3 (Gated DeltaNet 0-2, attention 3)");
  // Without an interval every trunk layer attends (a dense model with an MTP block).
  const BlockLayout dense = read_block_layout(GgufReader(file(3, 1, 0), "m.gguf"));
  EXPECT_EQ(dense.kinds, (std::vector<K>{K::kAttention, K::kAttention, K::kMtp}));
  EXPECT_EQ(describe(dense), "3 blocks: trunk 0-1, MTP 2");
}

TEST(BlockLayout, BrokenContractsAreErrors) {
  for (const int nextn : {5, 6}) {
    const std::string e = error_of(file(5, nextn, 4));
    EXPECT_NE(e.find("qwen35.nextn_predict_layers"), std::string::npos) << e;
    EXPECT_NE(e.find("block_count is 5"), std::string::npos) << e;
  }
  const std::string missing = error_of(file(5, 1, 4, /*mtp_tensors=*/false));
  EXPECT_NE(missing.find("blk.4.nextn.hnorm.weight"), std::string::npos) << missing;
  EXPECT_NE(missing.find("m.gguf"), std::string::npos) << missing;
  // The MTP block counted in block_count: a file whose nextn tensors sit past it is incomplete.
  GgufWriter w;
  w.set_string("general.architecture", "qwen35");
  w.set_u32("qwen35.block_count", 4);
  w.set_u32("qwen35.nextn_predict_layers", 1);
  for (const std::string& t : required_nextn_tensors()) {
    w.add_tensor("blk.4." + t, DType::kF32, {4}, std::vector<uint8_t>(16, 0));
  }
  const std::string past = error_of(w.to_bytes());
  EXPECT_NE(past.find("blk.3 is an MTP block"), std::string::npos) << past;
  EXPECT_NE(error_of(file(0, -1, 4)).find("qwen35.block_count' is 0"), std::string::npos);
}

}  // namespace
}  // namespace fulgur
