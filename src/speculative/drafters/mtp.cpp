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
  h.taps = {static_cast<int>(target.n_layer())};
  return std::make_unique<ChainDrafter>(target, params, std::move(h));
}

}  // namespace fulgur
