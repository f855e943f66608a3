// The MTP drafter (speculative/drafters/mtp.h) on tiny generated Gated-DeltaNet hybrids and
// Nemotron-H models with an MTP block, and on the trained zoo qwen35 when it is there:
//  * greedy output identical with and without draft-mtp, alone and behind the n-gram drafter, 1
//    and 4 sequences, with random heads (drafts rejected) and with the head's drafts replaced by
//    the target's own continuation corrupted at a cycling position (accepted at every position);
//  * after every step the drafter's state is that of a fresh drafter given the committed history
//    at once: its next draft is the same (rows paired (token at p, hidden at p - 1) whichever
//    drafter drafted the step);
//  * a head constructed to agree with the target is accepted (almost) always; at a high
//    temperature, p and q are both nearly flat and most random drafts are accepted;
//  * under a grammar, greedy output is the plain constrained output with the agreeing head's own
//    chains (accepted, cut by the grammar) and with the constrained continuation replayed with
//    wrong tokens (accepted, rejected: the recurrent target rolled back);
//  * sampled output has the target's distribution (every emitted token checked);
//  * the zoo's trained MTP block is accepted about as the zoo README says;
//  * bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "constrained_generation.h"
#include "controlled_drafters.h"
#include "core/error.h"
#include "emission_check.h"
#include "gguf_edit.h"
#include "grammar/gbnf_parser.h"
#include "speculative/drafters/mtp.h"
#include "speculative/target_features.h"
#include "speculative/drafters/ngram.h"
#include "spec_fixture.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"
#include "zoo_path.h"

namespace fulgur {
namespace {

using testing_support::ControlledDrafter;
using testing_support::F32Tensor;
using testing_support::greedy_sampling;
using testing_support::plain_generate;
using testing_support::spec_generate;
using testing_support::test_prompts;
using testing_support::tiny_model;

using testing_support::kNPredict;

std::unique_ptr<ChainDrafter> make_mtp(const Model& target, int n_max) {
  ChainParams p;
  p.n_max = n_max;
  p.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1};
  return make_mtp_drafter(target, p);
}

std::vector<std::vector<int32_t>> plain_outputs(const Model& m, const SamplerParams& sp,
                                                const std::vector<int>& n_predict = kNPredict) {
  std::vector<std::vector<int32_t>> out;
  const auto prompts = test_prompts();
  for (size_t i = 0; i < n_predict.size(); ++i) out.push_back(plain_generate(m, prompts[i], n_predict[i], sp, sp.seed + i));
  return out;
}

// A copy of the tiny qwen35 + MTP file whose MTP block computes what the trunk computes, up to
// rounding: the trunk becomes a bigram model (every mixer's output projection and the FFNs of
// layers 1-3 zeroed, embedding rows scaled to root mean square kRms and untied from the output
// head, so x = e + FFN0(norm(e)), a random function of the token with FFN0 dominating), and the
// block reads c·RMSNorm(e) = e (c = sqrt(kRms² + eps)) through eh_proj = [c·I | 0] (the hidden
// state ignored), zeroes
// its attention, and runs layer 0's FFN; its logits then are the target's times `alpha`
// (shared_head_norm = alpha · output_norm): alpha 1 agrees, alpha 2 is the target at half the
// temperature.
std::string agreeing_head(float alpha) {
  const std::string src = tiny_model("qwen35", DType::kF32, 1, true);
  const GgufReader r(src);
  const int64_t E = 256;
  const float eps = r.get_f32("qwen35.attention.layer_norm_rms_epsilon");
  testing_support::GgufEdit edit;
  const auto zero = [&](const std::string& name) {
    F32Tensor t = testing_support::read_f32(r, name);
    std::fill(t.data.begin(), t.data.end(), 0.0f);
    edit.tensors[name] = std::move(t);
  };
  const auto copy = [&](const std::string& from, const std::string& to) {
    edit.tensors[to] = testing_support::read_f32(r, from);
  };
  constexpr float kRms = 0.05f;
  F32Tensor embd = testing_support::read_f32(r, "token_embd.weight");
  edit.tensors["output.weight"] = embd;  // the head keeps the original rows (now untied)
  for (size_t v = 0; v < embd.data.size() / E; ++v) {
    float* row = embd.data.data() + v * E;
    double ms = 0;
    for (int64_t c = 0; c < E; ++c) ms += static_cast<double>(row[c]) * row[c];
    const float s = static_cast<float>(kRms / std::sqrt(ms / E));
    for (int64_t c = 0; c < E; ++c) row[c] *= s;
  }
  edit.tensors["token_embd.weight"] = std::move(embd);
  for (const char* name : {"blk.0.ssm_out.weight", "blk.1.ssm_out.weight", "blk.2.ssm_out.weight",
                           "blk.3.attn_output.weight", "blk.1.ffn_down.weight", "blk.2.ffn_down.weight",
                           "blk.3.ffn_down.weight", "blk.4.attn_output.weight"}) {
    zero(name);
  }
  for (const char* t : {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", "post_attention_norm.weight"}) {
    copy(std::string("blk.0.") + t, std::string("blk.4.") + t);
  }
  F32Tensor eh{{2 * E, E}, std::vector<float>(static_cast<size_t>(2 * E * E), 0.0f)};
  for (int64_t o = 0; o < E; ++o) eh.data[static_cast<size_t>(o * 2 * E + o)] = std::sqrt(kRms * kRms + eps);
  edit.tensors["blk.4.nextn.eh_proj.weight"] = std::move(eh);
  edit.tensors["blk.4.nextn.enorm.weight"] = {{E}, std::vector<float>(static_cast<size_t>(E), 1.0f)};
  F32Tensor norm = testing_support::read_f32(r, "output_norm.weight");
  for (float& w : norm.data) w *= alpha;
  edit.tensors["blk.4.nextn.shared_head_norm.weight"] = std::move(norm);
  return testing_support::write_edited_gguf(
      src, ::testing::TempDir() + "/fulgur_mtp_agreeing_" + std::to_string(alpha) + ".gguf", edit);
}

// Each draft the inner drafter made equals the draft of a fresh drafter given the committed
// history at once.
void expect_state_matches_history(const Model& m, const ControlledDrafter& controlled,
                                  const std::vector<std::vector<int32_t>>& out, int n_max, const std::string& what) {
  testing_support::expect_drafts_match_history(m, controlled, test_prompts(), out, greedy_sampling(),
                                               [&] { return make_mtp(m, n_max); }, what);
}

class MtpTargets : public ::testing::TestWithParam<std::string> {};

TEST_P(MtpTargets, GreedyIsIdenticalWithAndWithoutDraftMtp) {
  const SamplerParams sp = greedy_sampling();
  const auto prompts = test_prompts();
  Model m(tiny_model(GetParam(), DType::kF32, 1, true));
  ASSERT_EQ(m.n_nextn(), 1);
  const std::vector<std::vector<int32_t>> want = plain_outputs(m, sp);
  const int V = static_cast<int>(m.n_vocab());
  const SpecParams fixed{.schedule = SpecSchedule::kFixed};
  GenerationStats st;
  for (int n_max : {1, 3}) {
    const std::string what = GetParam() + ", n_max " + std::to_string(n_max);
    auto mtp = make_mtp(m, n_max);
    EXPECT_EQ(spec_generate(m, sp, {mtp.get()}, prompts, kNPredict, &st, fixed), want) << what;
    EXPECT_GT(st.drafters.at(0).drafts, 60) << what;
    EXPECT_EQ(spec_generate(m, sp, {mtp.get()}, prompts, kNPredict, &st), want) << what << ", adaptive";
    // The head's drafts replaced by the target's continuation, wrong at a cycling position: every
    // draft position accepted and rejected; the head's own drafts checked against a fresh head.
    ControlledDrafter controlled(*mtp, V, {.corrupt = true});
    for (size_t i = 0; i < prompts.size(); ++i) {
      controlled.set_reference(static_cast<int>(i), want[i], static_cast<int32_t>(prompts[i].size()));
    }
    EXPECT_EQ(spec_generate(m, sp, {&controlled}, prompts, kNPredict, &st, fixed), want) << what;
    EXPECT_EQ(st.drafters.at(0).accepted_at, controlled.expected_accepted_at()) << what;
    for (size_t i = 0; i < static_cast<size_t>(n_max); ++i) EXPECT_GT(st.drafters.at(0).accepted_at.at(i), 0) << what;
    expect_state_matches_history(m, controlled, want, n_max, what);
    // Behind the n-gram drafter: steps the n-gram drafter drafts still pair the MTP rows.
    NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
    ControlledDrafter behind(*mtp, V, {.corrupt = true});
    for (size_t i = 0; i < prompts.size(); ++i) {
      behind.set_reference(static_cast<int>(i), want[i], static_cast<int32_t>(prompts[i].size()));
    }
    EXPECT_EQ(spec_generate(m, sp, {&ngram, &behind}, prompts, kNPredict, &st, fixed), want) << what << ", ngram";
    EXPECT_GE(st.drafters.at(0).drafts, 3) << what << ": the n-gram drafter drafted steps too";
    expect_state_matches_history(m, behind, want, n_max, what + ", behind ngram");
    // One sequence at a time.
    const auto one = spec_generate(m, sp, {mtp.get()}, {prompts[0]}, {kNPredict[0]}, &st, fixed);
    EXPECT_EQ(one[0], want[0]) << what << ", alone";
  }
}

// Nemotron-H's block pairs with the normed hidden state (its other tests: test_mtp_nemotron.cpp).
INSTANTIATE_TEST_SUITE_P(Archs, MtpTargets,
                         ::testing::Values("qwen35", "qwen35moe", "qwen3next", "nemotron_h", "nemotron_h_moe"),
                         [](const auto& info) { return info.param; });

// The constructed head agrees with the target: (almost) every greedy draft is accepted, at
// every position of chains up to 4 long, and the output is the target's.
TEST(Mtp, AgreeingHeadIsAccepted) {
  Model m(agreeing_head(1.0f));
  const SamplerParams sp = greedy_sampling();
  const auto want = plain_outputs(m, sp);
  for (int n_max : {1, 4}) {
    auto mtp = make_mtp(m, n_max);
    GenerationStats st;
    EXPECT_EQ(spec_generate(m, sp, {mtp.get()}, test_prompts(), kNPredict, &st, {.schedule = SpecSchedule::kFixed}), want);
    const DrafterStats& s = st.drafters.at(0);
    std::printf("[agreeing head, n_max %d] %lld of %lld drafts accepted, %.2f tokens per step\n", n_max,
                static_cast<long long>(s.accepted), static_cast<long long>(s.drafted), s.mean_accepted_length());
    ASSERT_EQ(s.accepted_at.size(), static_cast<size_t>(n_max));
    for (int i = 0; i < n_max; ++i) {
      EXPECT_GE(s.accepted_at[i], s.drafted_at[i] * 95 / 100) << "position " << i;
    }
    EXPECT_GT(s.mean_accepted_length(), 0.9 * (n_max + 1));
  }
}

// Under a grammar (the server's response_format / tool_choice) the generator cuts an MTP chain at
// the first token the grammar rejects and verifies the rest against the masked target, so greedy
// output is the plain constrained output, with the agreeing head of Mtp.AgreeingHeadIsAccepted:
//  * its own chains under a grammar that forbids 'Y' and '{' (tokens with them are fixed points
//    the output would otherwise settle in, so every output goes on without repeating itself):
//    accepted until the head's next token is one the grammar forbids, cut there, and the masked
//    target's token drafted from on;
//  * its chains replaced by the constrained continuation corrupted at a cycling position: the
//    wrong token (one the grammar allows) rejected by the target after accepted drafts, so the
//    target, a Gated-DeltaNet hybrid (qwen35), rolls its recurrent state back to the middle of
//    the step.
// A verifier that left drafted steps unmasked would emit the unmasked argmax after the accepted
// drafts of a chain the grammar cut: the token the grammar forbade.
TEST(Mtp, GreedyUnderAGrammarIsTheSame) {
  using testing_support::Constrained;
  using testing_support::generate_constrained;
  Model m(agreeing_head(1.0f));
  const auto no_y_brace = std::make_shared<Grammar>(parse_gbnf("root ::= [^Y{]*"));
  const Constrained want = generate_constrained(m, nullptr, no_y_brace);
  ASSERT_NE(want.out, plain_outputs(m, greedy_sampling())) << "the grammar changes the output";
  for (size_t i = 0; i < want.out.size(); ++i) {
    EXPECT_EQ(want.out[i].size(), static_cast<size_t>(kNPredict[i])) << "sequence " << i << " ended early";
  }
  auto mtp = make_mtp(m, 3);
  const Constrained own = generate_constrained(m, mtp.get(), no_y_brace);
  print_counts("MTP under a grammar, agreeing head", own);
  EXPECT_EQ(own.out, want.out) << "the agreeing head's own chains";
  EXPECT_GE(own.accepted, 50) << "the head's chains are accepted";
  EXPECT_GT(own.accepted, own.drafts) << "past the first position of a chain";
  EXPECT_GE(own.cut, 20) << "and cut by the grammar";

  ControlledDrafter controlled(*mtp, static_cast<int>(m.n_vocab()), {.corrupt = true});
  const auto prompts = test_prompts();
  for (size_t i = 0; i < prompts.size(); ++i) {
    controlled.set_reference(static_cast<int>(i), want.out[i], static_cast<int32_t>(prompts[i].size()));
  }
  const Constrained replayed = generate_constrained(m, &controlled, no_y_brace);
  print_counts("MTP under a grammar, replayed with wrong tokens", replayed);
  EXPECT_EQ(replayed.out, want.out) << "the constrained continuation replayed with wrong tokens";
  EXPECT_GE(replayed.accepted, 20) << "the constrained continuation is accepted";
  EXPECT_GE(replayed.drafted - replayed.accepted, 20) << "wrong tokens are rejected: the recurrent state rolled back";
}

// At temperature 100 both p and a random head's q are nearly uniform over the vocabulary, so
// min(1, p/q) is close to 1: most drafts are accepted although the head knows nothing.
TEST(Mtp, HighTemperatureAcceptsMostRandomDrafts) {
  Model m(tiny_model("qwen35", DType::kF32, 1, true));
  SamplerParams sp;
  sp.temperature = 100.0f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  sp.seed = 3;
  auto mtp = make_mtp(m, 3);
  GenerationStats st;
  const auto out = spec_generate(m, sp, {mtp.get()}, test_prompts(), kNPredict, &st, {.schedule = SpecSchedule::kFixed});
  const DrafterStats& s = st.drafters.at(0);
  std::printf("[temperature 100] %lld of %lld drafts accepted\n", static_cast<long long>(s.accepted),
              static_cast<long long>(s.drafted));
  EXPECT_GT(s.drafted, 100);
  EXPECT_GT(s.acceptance_rate(), 0.8);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].size(), static_cast<size_t>(kNPredict[i]));
}

// Sampled drafting with the head's real q: every emitted token has the target's distribution
// (emission_check.h), with the head the target at twice the temperature (q flatter than p:
// about half to three quarters of the drafts accepted at each position).
TEST(Mtp, SampledOutputHasTheTargetsDistribution) {
  Model m(agreeing_head(0.5f));
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  constexpr int kDrafts = 3;
  auto mtp = make_mtp(m, kDrafts);
  GenerationStats st;
  const auto runs = testing_support::sampled_rounds(m, sp, *mtp, &st);
  testing_support::expect_emissions_lossless(m, sp, runs, kDrafts, 200,
                                             {testing_support::Simulated::kArgmaxBonus,
                                              testing_support::Simulated::kResampleP});
  testing_support::expect_acceptance_between(st.drafters.at(0), kDrafts, 0.4, 0.8);
}

// The zoo's qwen35 with its trained MTP block (float32 GGUF), on the zoo's held-out Python
// files: greedy output identical with and without draft-mtp, and the acceptance the zoo README
// reports for llama.cpp's MTP driver ("on the order of 0.7 drafted tokens per step at n-max 1
// and a little over 1 at n-max 2-3").
TEST(MtpZoo, TrainedHeadIsAcceptedAsTheZooSays) {
  const std::string path = test::zoo_dir() + "/zoo-qwen35-code/zoo-qwen35-code-f32.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (set FULGUR_ZOO_DIR)";
  const std::vector<std::string> files = test::zoo_heldout_files(::testing::TempDir());
  if (files.size() < 6) GTEST_SKIP() << "no held-out files (python3 and /usr/lib/python3.11, or FULGUR_ZOO_HELDOUT)";
  Model m(path);
  const Tokenizer tok(read_vocab(m.gguf()));
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < 6; ++i) {
    std::ifstream f(files[i], std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    std::vector<int32_t> ids = tok.encode(text.str(), false);
    ids.resize(std::min<size_t>(ids.size(), 96));
    prompts.push_back(ids);
  }
  const SamplerParams sp = greedy_sampling();
  const std::vector<int> n_predict(prompts.size(), 64);
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) want.push_back(plain_generate(m, p, 64, sp, 0));
  // Recorded in zoo/README.md (drafts, accepted), the same on every kernel family; greedy
  // acceptance on fixed prompts moves only with the drafter, so the bound is 3 % of it.
  const std::map<int, std::pair<int64_t, int64_t>> recorded = {{1, {216, 165}}, {2, {165, 217}}, {3, {145, 236}}};
  for (int n_max : {1, 2, 3}) {
    auto mtp = make_mtp(m, n_max);
    GenerationStats st;
    EXPECT_EQ(spec_generate(m, sp, {mtp.get()}, prompts, n_predict, &st, {.schedule = SpecSchedule::kFixed}), want) << n_max;
    const DrafterStats& s = st.drafters.at(0);
    const double per_step = static_cast<double>(s.accepted) / static_cast<double>(s.drafts);
    std::printf("[zoo qwen35 MTP, n_max %d] %lld drafts, %lld of %lld drafted tokens accepted: %.2f per step;"
                " per position", n_max, static_cast<long long>(s.drafts), static_cast<long long>(s.accepted),
                static_cast<long long>(s.drafted), per_step);
    for (double r : s.acceptance_per_position()) std::printf(" %.2f", r);
    std::printf("\n");
    const auto [drafts, accepted] = recorded.at(n_max);
    const double want = static_cast<double>(accepted) / static_cast<double>(drafts);
    EXPECT_NEAR(per_step, want, 0.03 * want) << "n_max " << n_max;
  }
}

// --spec-p-min cuts a chain before the first token whose probability (greedy: the top
// probability of the head's softmax) is below it: at 1 nothing is drafted, at 0 the whole chain,
// and as it rises the draft is an ever shorter prefix of the whole chain, cut inside it too.
TEST(Mtp, PMinCutsTheChain) {
  Model m(tiny_model("qwen35", DType::kF32, 1, true));
  const SamplerParams sp = greedy_sampling();
  const std::vector<int32_t> history = test_prompts()[0];
  const int32_t n = static_cast<int32_t>(history.size()) - 1;
  const auto draft_with = [&](float p_min) {
    auto mtp = make_mtp(m, 4);
    Context ctx(m, {.n_ctx = 64, .n_batch = 64, .n_threads = 1});
    testing_support::commit_history(*mtp, ctx, 0, history, n);
    DraftRequest req;
    req.anchor = history.back();
    req.anchor_pos = n;
    req.n_max = 4;
    req.p_min = p_min;
    req.sampling = &sp;
    Draft d;
    mtp->draft(req, d);
    return d.tokens;
  };
  EXPECT_EQ(draft_with(1.0f).size(), 0u);
  const std::vector<int32_t> all = draft_with(0.0f);
  ASSERT_EQ(all.size(), 4u);
  std::set<size_t> lengths;
  size_t last = all.size();
  for (float p_min = 0.002f; p_min < 1.0f; p_min *= 1.25f) {
    const std::vector<int32_t> d = draft_with(p_min);
    EXPECT_LE(d.size(), last) << "p_min " << p_min;
    EXPECT_EQ(d, std::vector<int32_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(d.size())));
    last = d.size();
    lengths.insert(d.size());
  }
  EXPECT_GE(lengths.size(), 3u) << "some p_min cuts inside the chain";
}

TEST(Mtp, BadInputIsRefused) {
  Model plain(tiny_model("qwen35"));
  try {
    make_mtp(plain, 3);
    FAIL() << "a model without an MTP block";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no MTP block"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nextn_predict_layers"), std::string::npos) << e.what();
  }
  Model dense(tiny_model("qwen3"));
  EXPECT_THROW(make_mtp(dense, 3), Error);
  Model m(tiny_model("qwen35", DType::kF32, 1, true));
  EXPECT_THROW(make_mtp(m, 0), Error);
  auto mtp = make_mtp(m, 2);
  // Commits must continue the history in order: the head pairs each token with the hidden state
  // of the position before it.
  Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  ctx.set_taps(mtp->required_taps());
  Batch b;
  for (int i = 0; i < 4; ++i) b.add(40 + i, i, 0, false);
  ctx.decode(b);
  const std::vector<int32_t> tokens = {40, 41, 42, 43};
  const std::vector<int64_t> rows = {0, 1, 2, 3};
  FeatureGather features(ctx, mtp->required_taps());
  const TargetFeatures f = features.gather(rows);
  mtp->commit(0, tokens, 0, f);
  EXPECT_THROW(mtp->commit(0, tokens, 7, f), Error);
  DraftRequest req;
  req.seq = 0;
  req.anchor = 44;
  req.anchor_pos = 9;
  const SamplerParams sp = greedy_sampling();
  req.sampling = &sp;
  req.n_max = 2;
  Draft d;
  EXPECT_THROW(mtp->draft(req, d), Error);
  Context no_taps(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  no_taps.decode(b);
  // A target context that does not export the head's tap cannot feed it; features of the wrong
  // width or row count are refused.
  EXPECT_THROW(FeatureGather(no_taps, mtp->required_taps()), Error);
  EXPECT_THROW(mtp->commit(1, tokens, 0, TargetFeatures{.data = f.data, .rows = f.rows, .width = 1}), Error);
  EXPECT_THROW(mtp->commit(1, tokens, 0, TargetFeatures{.data = f.data, .rows = 3, .width = f.width}), Error);
}

}  // namespace
}  // namespace fulgur
