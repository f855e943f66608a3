// libFuzzer target for the config.json readers: the input is the text of a config.json, read
// the way `fulgur convert` reads it: the target planners (plan_hf_model: qwen3, qwen2, llama,
// qwen3moe, nemotron_h, with and without an lm_head), and the block-drafter formats (DeepSpec,
// z-lab DFlash, DFlash2, speculators, SpecForge) with a few sets of checkpoint tensor names, the
// compressed-tensors quantization_config and the llama.cpp-difference report. Only fulgur::Error
// may escape; anything else (nlohmann exceptions, bad_alloc, a sanitizer
// report) is a bug.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "convert/convert_model.h"
#include "convert/draft_config.h"
#include "convert/hf_config.h"
#include "convert/nvfp4_checkpoint.h"
#include "core/error.h"
#include "gguf/gguf_writer.h"

namespace {

template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const fulgur::Error&) {
    // Rejected with a message: the expected outcome for a malformed config.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  expect_clean([&] {
    const fulgur::HfConfig cfg = fulgur::HfConfig::parse(text, "fuzz/config.json");
    volatile size_t sink = 0;
    expect_clean([&] { sink = sink + fulgur::parse_quantization_config(cfg).nvfp4; });
    if (!fulgur::is_draft_config(cfg)) {
      for (const std::set<std::string>& names :
           {std::set<std::string>{}, std::set<std::string>{"lm_head.weight"}}) {
        expect_clean([&] {
          fulgur::GgufWriter w;
          const fulgur::ArchPlan plan = fulgur::plan_hf_model(cfg, names, w);
          sink = sink + plan.tensors.size() + w.metadata().size();
        });
      }
      return;
    }
    const std::set<std::string> name_sets[] = {
        {},
        {"d2t", "lm_head.weight"},
        {"logit_head.markov_head.markov_w1.weight", "logit_head.confidence_head.proj.weight"},
    };
    for (const std::set<std::string>& names : name_sets) {
      expect_clean([&] {
        const fulgur::DraftSpec spec = fulgur::parse_draft_config(cfg, names);
        sink = sink + spec.describe().size() + spec.target_layers.size() +
               fulgur::llamacpp_differences(spec).size();
      });
    }
    (void)sink;
  });
  return 0;
}
