// The Gemma 4 assistant (llama.cpp's draft-mtp with a `gemma4-assistant` draft, -md;
// reference/archs-gguf.md "Gemma 4 assistant MTP drafter"): a separate small model
// (model/archs/gemma4_assistant.cpp) as a chain drafter's head (drafters/chain.h) that keeps no
// KV of its own: its layers attend to the target context's cache of the target's last sliding
// and last full layer. It is paired with the target's final-normed hidden state (tap n_layer + 1)
// of the position before the anchor, and chains on its own projection of its normed output; all
// rows of a draft sit at the anchor's position.
#pragma once

#include <memory>
#include <string>

#include "speculative/drafters/chain.h"

namespace fulgur {

// Loads the assistant at `path` for `target`, whose context `target_ctx` (read only, it must
// outlive the drafter) holds the KV the assistant attends to. Throws fulgur::Error naming the
// file when it is not a gemma4-assistant, or does not fit the target (not a gemma4 target, other
// width, vocabulary or attention layout).
std::unique_ptr<ChainDrafter> make_gemma4_assistant_drafter(const Model& target,
                                                            const Context& target_ctx,
                                                            const std::string& path,
                                                            ChainParams params);

}  // namespace fulgur
