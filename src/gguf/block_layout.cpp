#include "gguf/block_layout.h"

#include "core/error.h"

namespace fulgur {
namespace {

// "0-2, 5" for the blocks of one kind.
std::string ranges(const std::vector<BlockKind>& kinds, BlockKind kind) {
  std::string out;
  for (size_t i = 0; i < kinds.size();) {
    if (kinds[i] != kind) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < kinds.size() && kinds[j + 1] == kind) ++j;
    out += cat(out.empty() ? "" : ", ", i, j > i ? cat("-", j) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& required_nextn_tensors() {
  static const std::vector<std::string> kNames = {"nextn.eh_proj.weight", "nextn.enorm.weight",
                                                  "nextn.hnorm.weight", "nextn.shared_head_norm.weight"};
  return kNames;
}

BlockLayout read_block_layout(const GgufReader& r) {
  BlockLayout l;
  l.arch = r.get_string("general.architecture");
  const std::string key = l.arch + ".block_count";
  l.n_block = r.get_u32(key);
  FULGUR_CHECK(l.n_block > 0, r.what(key), " is 0");
  l.n_nextn = r.get_u32(l.arch + ".nextn_predict_layers", 0);
  FULGUR_CHECK(l.n_nextn < l.n_block, r.what(l.arch + ".nextn_predict_layers"), " is ", l.n_nextn,
               " but ", key, " is ", l.n_block, ": the MTP blocks are counted in block_count, so the "
               "trunk would have no layer");
  l.attention_interval = r.get_u32(l.arch + ".full_attention_interval", 0);
  for (int64_t i = 0; i < l.n_block; ++i) {
    if (i >= l.n_trunk()) {
      l.kinds.push_back(BlockKind::kMtp);
      for (const std::string& t : required_nextn_tensors()) {
        const std::string name = cat("blk.", i, ".", t);
        FULGUR_CHECK(r.find_tensor(name) != nullptr, r.where(), ": blk.", i, " is an MTP block (",
                     l.arch, ".nextn_predict_layers ", l.n_nextn, " of block_count ", l.n_block,
                     ") but has no tensor ", name);
      }
    } else {
      const bool attends = l.attention_interval == 0 || (i + 1) % l.attention_interval == 0;
      l.kinds.push_back(attends ? BlockKind::kAttention : BlockKind::kGatedDeltaNet);
    }
  }
  return l;
}

std::string describe(const BlockLayout& l) {
  const std::vector<BlockKind> trunk(l.kinds.begin(), l.kinds.begin() + l.n_trunk());
  std::string out = cat(l.n_block, " blocks: trunk 0", l.n_trunk() > 1 ? cat("-", l.n_trunk() - 1) : "");
  const std::string gdn = ranges(trunk, BlockKind::kGatedDeltaNet);
  if (!gdn.empty()) out += cat(" (Gated DeltaNet ", gdn, ", attention ", ranges(trunk, BlockKind::kAttention), ")");
  if (l.n_nextn > 0) out += cat(", MTP ", ranges(l.kinds, BlockKind::kMtp));
  return out;
}

}  // namespace fulgur
