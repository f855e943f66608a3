#include "speculative/drafters/gemma4_assistant.h"

#include <algorithm>

#include "core/error.h"

namespace fulgur {

std::unique_ptr<ChainDrafter> make_gemma4_assistant_drafter(const Model& target,
                                                            const Context& target_ctx,
                                                            const std::string& path,
                                                            ChainParams params) {
  FULGUR_CHECK(&target_ctx.model() == &target,
               "--spec draft-mtp: the context given runs another model than ", target.where());
  // The head keeps no rows between drafts: a draft holds at most n_max + 1 per sequence (the
  // visible-cell scan of every decode then walks a few hundred cells, not the target's context).
  params.context.n_ctx = int64_t{kMaxSequences} * (std::max(params.n_max, 1) + 1);
  ChainHead h;
  h.name = "draft-mtp";
  h.model = std::make_unique<Model>(path, ModelOptions{.pack = params.pack, .base = &target});
  FULGUR_CHECK(h.model->arch() == "gemma4-assistant", "--spec draft-mtp -md '", path, "': a '",
               h.model->arch(),
               "' model is not a Gemma 4 assistant (general.architecture gemma4-assistant)");
  h.taps = {final_norm_tap(target.n_layer())};
  h.feed = ChainFeed::kProjectedAux;
  h.target_kv = &target_ctx;
  return std::make_unique<ChainDrafter>(target, params, std::move(h));
}

}  // namespace fulgur
