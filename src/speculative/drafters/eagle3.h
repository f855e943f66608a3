// EAGLE-3 (llama.cpp's draft-eagle3; reference/llamacpp-speculative.md §6): a one-layer draft
// (`eagle3` GGUF, model/archs/eagle3.h) fed the target's three taps of each committed position,
// with its own KV, drafting a chain that feeds its own hidden state back. It is the MTP drafter's
// chain (speculative/drafters/mtp.h) with EAGLE-3's pairing: the row at position P holds (x_{P+1}, g_P),
// g_P = fc · [the three taps of P], chain rows g' = the layer's own pre-norm output; the reduced
// vocabulary goes to target ids through d2t.
#pragma once

#include <string>

#include "speculative/drafters/mtp.h"

namespace fulgur {

class Eagle3Drafter : public MtpDrafter {
 public:
  // Loads the draft (throws fulgur::Error naming the file and the mismatch with the target).
  Eagle3Drafter(const Model& target, const std::string& path, MtpParams params);

  std::string name() const override { return "draft-eagle3"; }
};

}  // namespace fulgur
