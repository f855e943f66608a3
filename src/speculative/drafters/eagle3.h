// EAGLE-3 (llama.cpp's draft-eagle3; reference/llamacpp-speculative.md §6): a one-layer draft
// (`eagle3` GGUF, model/archs/eagle3.h) as a chain drafter's head (drafters/chain.h), fed the
// target's three taps of each committed position: the row at position P holds (x_{P+1}, g_P),
// g_P = fc · [the three taps of P], chain rows g' = the layer's own pre-norm output; the reduced
// vocabulary goes to target ids through d2t.
#pragma once

#include <memory>
#include <string>

#include "speculative/drafters/chain.h"

namespace fulgur {

// Loads the draft (throws fulgur::Error naming the file and the mismatch with the target).
std::unique_ptr<ChainDrafter> make_eagle3_drafter(const Model& target, const std::string& path,
                                                  ChainParams params);

}  // namespace fulgur
