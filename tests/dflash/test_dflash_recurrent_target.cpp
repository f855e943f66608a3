// Block drafters on a recurrent target: nemotron_h_moe tiny (layers M E M * E M: Mamba2, MoE,
// Mamba2, attention, MoE, Mamba2), with drafts that read the target's hidden states after
// Mamba2 and attention layers. Greedy output with DFlash, DSpark and DFlash2 drafts equals plain
// decoding for 1 and 4 sequences while drafts are accepted at every draft position: the
// verification rows step the recurrence as single-token decode does, and seq_rm of the rejected
// rows restores the states the snapshots kept.
#include "dflash/dflash_fixture.h"
#include "model/desc.h"
#include "speculative/controlled_drafters.h"

namespace fulgur::dflash_test {
namespace {

using testing_support::ControlledDrafter;

Env& recurrent_env() {
  static Env* e = make_env("nemotron_h_moe", 3);
  return *e;
}

struct Kind {
  const char* name;
  const char* format;
  const char* markov;
  std::vector<int64_t> target_layers;  // ids whose outputs the draft reads
};

void PrintTo(const Kind& k, std::ostream* os) { *os << k.name; }

class DflashOnRecurrentTarget : public ::testing::TestWithParam<Kind> {};

TEST_P(DflashOnRecurrentTarget, GreedyEqualsPlainDecodingThroughAcceptedDrafts) {
  const Kind k = GetParam();
  const Env& e = recurrent_env();
  ASSERT_EQ(e.target->desc().layers[0].mixer, MixerKind::kMamba2);
  ASSERT_EQ(e.target->desc().layers[2].mixer, MixerKind::kMamba2);
  ASSERT_EQ(e.target->desc().layers[3].mixer, MixerKind::kAttention);
  DraftSynthOptions o = draft_options(k.format, k.markov, e);
  o.n_target_layers = e.target->n_layer();
  o.target_layer_ids = k.target_layers;
  DflashDrafter d(make_draft(std::string("recurrent_") + k.name, o, "", e), *e.target, {.n_threads = 1});
  const size_t n_drafts = static_cast<size_t>(d.max_draft());
  for (int n_seqs : {1, 4}) {
    SCOPED_TRACE(::testing::Message() << k.name << " with " << n_seqs << " sequences");
    const GenResult plain = generate(nullptr, n_seqs, 24, 0.0f, 0.0f, e.target.get());
    ControlledDrafter controlled(d, static_cast<int>(e.n_vocab), {.corrupt = true});
    for (int s = 0; s < n_seqs; ++s) controlled.set_reference(s, plain.out[s], 9 + 3 * s);
    const GenResult r = generate(&controlled, n_seqs, 24, 0.0f, 0.0f, e.target.get());
    EXPECT_EQ(r.out, plain.out);
    EXPECT_EQ(r.stats.accepted_at, controlled.expected_accepted_at());
    ASSERT_EQ(r.stats.accepted_at.size(), n_drafts);
    for (size_t i = 0; i < n_drafts; ++i) {
      EXPECT_GT(r.stats.accepted_at[i], 0) << "draft position " << i;
      EXPECT_LT(r.stats.accepted_at[i], r.stats.drafted_at[i]) << "draft position " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, DflashOnRecurrentTarget,
                         ::testing::Values(Kind{"dflash", "zlab", "", {0, 3}},
                                           Kind{"dspark", "deepspec", "vanilla", {2, 3, 5}},
                                           Kind{"dflash2", "dflash2", "", {0, 3}}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fulgur::dflash_test
