#include "speculative/drafters/eagle3.h"

#include "core/error.h"

namespace fulgur {

std::unique_ptr<ChainDrafter> make_eagle3_drafter(const Model& target, const std::string& path,
                                                  ChainParams params) {
  ChainHead h;
  h.name = "draft-eagle3";
  h.model = std::make_unique<Model>(path, ModelOptions{.pack = params.pack, .base = &target});
  const Eagle3Info* info = h.model->eagle3();
  FULGUR_CHECK(info != nullptr, "--spec draft-eagle3: '", path, "' is a '", h.model->arch(),
               "' model, not an EAGLE-3 draft (general.architecture eagle3)");
  h.taps = info->extract_layers;
  h.shift = 1;
  h.feed = ChainFeed::kPreNormEmbd;
  h.d2t = info->d2t;
  return std::make_unique<ChainDrafter>(target, params, std::move(h));
}

}  // namespace fulgur
