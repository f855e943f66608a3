// The confidence schedule (speculative/scheduler.h) with a real DSpark drafter: sampled output keeps
// the target's distribution while the prefix each step verifies depends on the confidence head,
// whose input includes the token drafted before (so c_{j+1} depends on x_j: the case the early
// stop exists for); and greedy output stays the plain one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "dflash_fixture.h"
#include "speculative/emission_check.h"

namespace fulgur::dflash_test {
namespace {

using testing_support::ControlledDrafter;

// Steps cost 1 + 0.3 rows: a few drafts pay, a whole block only when confident.
StepTable steep_table() {
  StepTable t;
  for (int64_t r = 1; r <= 64; r *= 2) {
    t.rows.push_back(r);
    t.seconds.push_back(1.0 + 0.3 * static_cast<double>(r));
  }
  return t;
}

// A unigram() DSpark draft whose confidence head reads only W1[prev], spread so that its logit
// has mean 1 and standard deviation 2 over the vocabulary: every step's confidences depend on
// the tokens drafted before, and vary enough for the schedule to verify different prefixes.
std::string spread_confidence_draft() {
  const std::string path = unigram_draft("sched_dspark", draft_options("deepspec", "vanilla"),
                                         {{"output.scale", 2.0f}, {"markov_w2.scale", 0.6f}});
  const GgufReader r(path);
  testing_support::F32Tensor w = testing_support::read_f32(r, "conf_proj.weight");   // [E + R]
  const testing_support::F32Tensor w1 = testing_support::read_f32(r, "markov_w1.weight");  // [V][R]
  const int64_t E = env().n_embd, V = env().n_vocab, R = static_cast<int64_t>(w.data.size()) - E;
  double sum = 0.0, sum2 = 0.0;
  for (int64_t v = 0; v < V; ++v) {
    double z = 0.0;
    for (int64_t i = 0; i < R; ++i) z += w.data[static_cast<size_t>(E + i)] * w1.data[static_cast<size_t>(v * R + i)];
    sum += z;
    sum2 += z * z;
  }
  const double mean = sum / static_cast<double>(V);
  const double sd = std::sqrt(sum2 / static_cast<double>(V) - mean * mean);
  const double g = 2.0 / sd;
  for (int64_t i = 0; i < E; ++i) w.data[static_cast<size_t>(i)] = 0.0f;
  for (int64_t i = 0; i < R; ++i) w.data[static_cast<size_t>(E + i)] *= static_cast<float>(g);
  testing_support::GgufEdit edit;
  edit.tensors["conf_proj.weight"] = std::move(w);
  edit.tensors["conf_proj.bias"] = {{1}, {static_cast<float>(1.0 - g * mean)}};
  return testing_support::write_edited_gguf(path, env().dir + "/sched_dspark_spread.gguf", edit);
}

TEST(DsparkConfidenceSchedule, SampledEmissionsKeepTheTargetsDistribution) {
  const Model& target = *unigram().model;
  DflashDrafter d(spread_confidence_draft(), target, {.n_threads = 1});
  ControlledDrafter logged(d, static_cast<int>(env().n_vocab), {});
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 0;
  Context ctx(target, {.n_ctx = 1024, .n_batch = 128, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.schedule = SpecSchedule::kConfidence;
  gp.spec.step_table = steep_table();
  // A clock that ticks once per reading: the schedule depends on the table's shape and the
  // confidences, not on this machine's load.
  auto ticks = std::make_shared<double>(0.0);
  gp.clock = [ticks] { return *ticks += 1e-3; };
  Generator gen(ctx, gp, {&logged});
  std::map<size_t, int64_t> verified;  // drafts verified -> steps
  testing_support::EmissionLog log(gen, logged);
  const auto on_verify = gen.on_verify;
  gen.on_verify = [&](int seq, int drafter, const Draft& draft, int n_accepted) {
    on_verify(seq, drafter, draft, n_accepted);
    ++verified[draft.tokens.size()];
  };
  run_logged_rounds(gen, log);
  // The schedule really cut: drafts of the whole block were drafted every step, but steps
  // verified different prefixes.
  int64_t drafted_steps = 0;
  for (const auto& [k, n] : verified) drafted_steps += n;
  std::string spread;
  for (const auto& [k, n] : verified) spread += " " + std::to_string(k) + ":" + std::to_string(n);
  ASSERT_EQ(verified.size(), 4u) << "verified lengths:" << spread;
  for (const auto& [k, n] : verified) EXPECT_LT(n, drafted_steps * 9 / 10) << "verified lengths:" << spread;
  const testing_support::EmissionCheck c = testing_support::check_emissions(target, sp, log.trajectories());
  EXPECT_TRUE(c.passes()) << c.describe();
  for (const auto bug : {testing_support::Simulated::kArgmaxBonus, testing_support::Simulated::kResampleP}) {
    EXPECT_FALSE(testing_support::check_emissions(target, sp, log.trajectories(), bug).passes());
  }
}

TEST(DsparkConfidenceSchedule, GreedyIsThePlainOutput) {
  DflashDrafter d(make_draft("sched_greedy", draft_options("deepspec", "vanilla")), *env().target,
                  {.n_threads = 1});
  const GenResult plain = generate(nullptr, 4, 30);
  Context ctx(*env().target, {.n_ctx = 1024, .n_batch = 512, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling.temperature = 0.0f;
  gp.spec.schedule = SpecSchedule::kConfidence;
  gp.spec.step_table = steep_table();
  gp.spec.confidence_temperatures = {{0.5f, 2.0f}};
  Generator g(ctx, gp, {&d});
  for (int s = 0; s < 4; ++s) g.start(s, prompt_tokens(s, 9 + 3 * s), 30);
  g.run();
  for (int s = 0; s < 4; ++s) EXPECT_EQ(g.output(s), plain.out[static_cast<size_t>(s)]) << "sequence " << s;
}

}  // namespace
}  // namespace fulgur::dflash_test
