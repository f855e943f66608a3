// Block drafters on targets other than Qwen3's: a recurrent one, nemotron_h_moe tiny (layers
// M E M * E M: Mamba2, MoE, Mamba2, attention, MoE, Mamba2), with drafts that read the target's
// hidden states after Mamba2 and attention layers; and Gemma 4 tiny (sliding-window layers with
// a 16-token window, shorter than the runs, full layers with their own head dim, scaled
// embeddings, soft-capped logits), the target family of the seeds' DSpark drafts. Greedy output
// with DFlash, DSpark and DFlash2 drafts equals plain decoding for 1 and 4 sequences while
// drafts are accepted at every draft position: the verification rows step the recurrence (or
// the window) as single-token decode does, and seq_rm of the rejected rows restores the states
// the snapshots kept (or the cells the window still needs).
#include <map>

#include "dflash/dflash_fixture.h"
#include "model/desc.h"

namespace fulgur::dflash_test {
namespace {

Env& target_env(const std::string& arch) {
  static std::map<std::string, Env*> envs;
  Env*& e = envs[arch];
  if (e == nullptr) e = make_env(arch, 3);
  return *e;
}

struct Kind {
  const char* name;
  const char* format;
  const char* markov;
  std::vector<int64_t> target_layers;  // ids whose outputs the draft reads
  const char* arch = "nemotron_h_moe";
};

void PrintTo(const Kind& k, std::ostream* os) { *os << k.name; }

class DflashOnOtherTargets : public ::testing::TestWithParam<Kind> {};

TEST_P(DflashOnOtherTargets, GreedyEqualsPlainDecodingThroughAcceptedDrafts) {
  const Kind k = GetParam();
  const Env& e = target_env(k.arch);
  if (std::string(k.arch) == "nemotron_h_moe") {
    ASSERT_EQ(e.target->desc().layers[0].mixer, MixerKind::kMamba2);
    ASSERT_EQ(e.target->desc().layers[2].mixer, MixerKind::kMamba2);
    ASSERT_EQ(e.target->desc().layers[3].mixer, MixerKind::kAttention);
  }
  DraftSynthOptions o = draft_options(k.format, k.markov, e);
  o.n_target_layers = e.target->n_layer();
  o.target_layer_ids = k.target_layers;
  DflashDrafter d(make_draft(std::string(k.arch) + "_" + k.name, o, "", e), *e.target, {.n_threads = 1});
  SCOPED_TRACE(::testing::Message() << k.name << " on " << k.arch);
  expect_lossless_with_accepted_drafts(d, *e.target, e.n_vocab);
}

INSTANTIATE_TEST_SUITE_P(Kinds, DflashOnOtherTargets,
                         ::testing::Values(Kind{"dflash", "zlab", "", {0, 3}},
                                           Kind{"dspark", "deepspec", "vanilla", {2, 3, 5}},
                                           Kind{"dflash2", "dflash2", "", {0, 3}},
                                           Kind{"gemma4_dflash", "zlab", "", {0, 3}, "gemma4"},
                                           Kind{"gemma4_dspark", "deepspec", "vanilla", {2, 3, 5}, "gemma4"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fulgur::dflash_test
