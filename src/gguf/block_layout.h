// The block layout of a hybrid / MTP GGUF as llama.cpp reads it (archs-gguf.md §4.3,
// llamacpp-speculative.md §5.1): {arch}.block_count counts every block, the last
// {arch}.nextn_predict_layers of them are MTP (NextN) blocks and the trunk is the rest; in the
// trunk of a Gated-DeltaNet hybrid (qwen3next, qwen35, qwen35moe) layer i attends iff
// (i + 1) % {arch}.full_attention_interval == 0 and is a Gated DeltaNet layer otherwise. Every MTP
// block holds nextn.eh_proj, nextn.enorm, nextn.hnorm and nextn.shared_head_norm (llama.cpp also
// knows optional nextn.embed_tokens and nextn.shared_head_head). `fulgur inspect` prints it; a
// model loader can take it as its check of the MTP contract.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"

namespace fulgur {

enum class BlockKind : uint8_t { kAttention, kGatedDeltaNet, kMtp };

struct BlockLayout {
  std::string arch;
  int64_t n_block = 0;            // {arch}.block_count
  int64_t n_nextn = 0;            // {arch}.nextn_predict_layers (0 when absent)
  int64_t attention_interval = 0; // {arch}.full_attention_interval (0 when absent: all attention)
  std::vector<BlockKind> kinds;   // [n_block]

  int64_t n_trunk() const { return n_block - n_nextn; }
};

// The tensors every MTP block must have ("nextn.eh_proj.weight", ...).
const std::vector<std::string>& required_nextn_tensors();

// Reads the layout; throws fulgur::Error naming the file and key or tensor when block_count is
// missing, nextn_predict_layers is not below block_count (the trunk needs a layer), or an MTP
// block lacks one of required_nextn_tensors().
BlockLayout read_block_layout(const GgufReader& reader);

// "5 blocks: trunk 0-3 (Gated DeltaNet 0-2, attention 3), MTP 4" for messages and inspect.
std::string describe(const BlockLayout& layout);

}  // namespace fulgur
