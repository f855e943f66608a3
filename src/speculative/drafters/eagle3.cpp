#include "speculative/drafters/eagle3.h"

#include "core/error.h"

namespace fulgur {
namespace {

ChainHead eagle3_head(const Model& target, const std::string& path, const MtpParams& p) {
  ChainHead h;
  h.model = std::make_unique<Model>(path, ModelOptions{.pack = p.pack, .base = &target});
  const Eagle3Info* info = h.model->eagle3();
  FULGUR_CHECK(info != nullptr, "--spec draft-eagle3: '", path, "' is a '", h.model->desc().arch,
               "' model, not an EAGLE-3 draft (general.architecture eagle3)");
  h.taps = info->extract_layers;
  h.shift = 1;
  h.chain_as_embd = true;
  h.d2t = info->d2t;
  return h;
}

}  // namespace

Eagle3Drafter::Eagle3Drafter(const Model& target, const std::string& path, MtpParams params)
    : MtpDrafter(target, params, eagle3_head(target, path, params)) {}

}  // namespace fulgur
