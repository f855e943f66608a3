// Multi-token prediction (llama.cpp's draft-mtp; reference/llamacpp-speculative.md §5): the MTP
// (NextN) block stored in the target's own GGUF drafts for it, as a chain drafter's head
// (drafters/chain.h). The block runs as a model of its own (ModelOptions::nextn: eh_proj over
// [enorm(embedding) ; hnorm(hidden)], the block's attention with its own KV, its FFN or MoE,
// shared_head_norm and the target's output head), paired with the target's final hidden state:
// pre-norm (tap n_layer) for the Gated-DeltaNet hybrids, after output_norm (final_norm_tap) for
// Nemotron-H, as llama.cpp's graphs export them.
#pragma once

#include <memory>

#include "speculative/drafters/chain.h"

namespace fulgur {

// Loads the MTP block of the target's GGUF (the target must have been loaded from a file).
// Throws fulgur::Error naming the file when it has no MTP block, or n_max < 1.
std::unique_ptr<ChainDrafter> make_mtp_drafter(const Model& target, ChainParams params);

}  // namespace fulgur
