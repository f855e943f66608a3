#include "speculative/drafters/mtp.h"

#include "core/error.h"

namespace fulgur {

std::unique_ptr<ChainDrafter> make_mtp_drafter(const Model& target, ChainParams params) {
  FULGUR_CHECK(target.n_nextn() > 0, "--spec draft-mtp: ", target.where(), " has no MTP block (",
               target.arch(), ".nextn_predict_layers is absent or 0; convert the checkpoint "
               "with its MTP block: fulgur convert --mtp)");
  FULGUR_CHECK(!target.path().empty(), "--spec draft-mtp: the target was not loaded from a file");
  ChainHead h;
  h.name = "draft-mtp";
  h.model = std::make_unique<Model>(target.path(), ModelOptions{.pack = params.pack, .base = &target, .nextn = true});
  // Nemotron-H's block pairs with normed rows on both sides (the target's output_norm, its own
  // final_layernorm in a chain), the Gated-DeltaNet hybrids' with the pre-norm hidden state.
  const bool normed = h.model->pairs_normed_hidden();
  h.taps = {normed ? final_norm_tap(target.n_layer()) : static_cast<int>(target.n_layer())};
  h.chain_normed = normed;
  return std::make_unique<ChainDrafter>(target, params, std::move(h));
}

}  // namespace fulgur
