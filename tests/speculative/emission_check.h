// The distribution test for speculative sampling on real models: every token a Generator emits
// is checked, at every index of the step that emitted it (accepted drafts, the token after a
// rejection, the bonus token after all drafts were accepted), against the target's exact
// distribution at that point.
//
// How: the exact distribution p_t of each emitted token comes from teacher forcing (the target
// decodes prompt + output in one batch; the Sampler turns each row into the distribution plain
// decoding would sample). With the ids of p_t sorted by descending probability, the randomized
// probability integral transform u_t = P(X before x_t) + V * p_t(x_t), V uniform, is exactly
// uniform on [0, 1) and independent from token to token when every x_t was drawn from p_t
// (whatever the vocabulary and the context). Token i of a step was drawn from p_t for every i
// (rejection sampling keeps each position's marginal, DESIGN §4), so the u of each index class
// are binned and compared with the uniform by Pearson's chi-square, per index and summed. Bugs that make an emitted
// token too likely (an argmax bonus, p sampled instead of the residual with a draft sharper than
// the target) pile u towards 0; too unlikely, towards 1.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "chi_square.h"
#include "controlled_drafters.h"
#include "model/context.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "speculative/generator.h"

namespace fulgur::testing_support {

enum class Emission { kAccepted, kCorrection, kBonus, kPlain };

// One sequence's run: its prompt and every emitted token with its index in its step and kind.
struct Trajectory {
  std::vector<int32_t> prompt, tokens;
  std::vector<int> index;
  std::vector<Emission> kind;
};

// Logs what a Generator emits for each sequence, with the index of each token in its step and
// its kind; how many drafts a step verified comes from Generator::on_verify (after the
// scheduler's cuts).
class EmissionLog {
 public:
  explicit EmissionLog(Generator& gen) {
    gen.on_tokens = [this](int seq, std::span<const int32_t> tokens) { on_tokens(seq, tokens); };
    gen.on_verify = [this](int seq, int, const Draft& d, int) { verified_.at(static_cast<size_t>(seq)) = d.tokens.size(); };
  }
  // (The drafter is no longer needed: the generator says what it verified.)
  EmissionLog(Generator& gen, [[maybe_unused]] const ControlledDrafter& drafter) : EmissionLog(gen) {}
  // Call after Generator::start(seq, prompt, ...).
  void start(int seq, const std::vector<int32_t>& prompt) {
    Trajectory& t = open_.at(static_cast<size_t>(seq));
    t = Trajectory{};
    t.prompt = prompt;
    verified_.at(static_cast<size_t>(seq)) = 0;
  }
  // Moves the sequence's trajectory into trajectories().
  void finish(int seq) { done_.push_back(std::move(open_.at(static_cast<size_t>(seq)))); }
  const std::vector<Trajectory>& trajectories() const { return done_; }

 private:
  void on_tokens(int seq, std::span<const int32_t> tokens) {
    // Drafts this step verified (on_verify runs before the step's tokens are emitted).
    const size_t k = verified_.at(static_cast<size_t>(seq));
    verified_.at(static_cast<size_t>(seq)) = 0;
    Trajectory& t = open_.at(static_cast<size_t>(seq));
    for (size_t i = 0; i < tokens.size(); ++i) {
      t.tokens.push_back(tokens[i]);
      t.index.push_back(static_cast<int>(i));
      Emission e = Emission::kAccepted;
      if (i + 1 == tokens.size()) {
        e = k == 0 ? Emission::kPlain : i == k ? Emission::kBonus : Emission::kCorrection;
      }
      t.kind.push_back(e);
    }
  }

  std::array<size_t, kMaxSequences> verified_{};
  std::array<Trajectory, kMaxSequences> open_;
  std::vector<Trajectory> done_;
};

// Bugs simulated on a logged run, to show the statistic catches them: the emitted tokens of one
// kind are replaced by what the buggy verifier would have emitted there.
enum class Simulated {
  kNone,
  kArgmaxBonus,  // bonus tokens become the argmax of their distribution
  kResampleP,    // tokens after a rejection become a fresh sample of p (not the residual's)
};

struct EmissionCheck {
  std::vector<std::vector<double>> u;            // [index in step][token] the transformed tokens
  std::vector<std::array<int64_t, 4>> kind_at;   // [index in step][Emission kind]
  std::vector<int64_t> impossible_at;            // [index in step] tokens outside p's support

  size_t indices() const { return u.size(); }
  // Counts of u in equal bins: 10, fewer when there are under 80 tokens (at least 8 expected
  // per bin, so the chi-square approximation holds), never under 2.
  std::vector<int64_t> bins(size_t i) const {
    const size_t n_bins = std::clamp<size_t>(u[i].size() / 8, 2, 10);
    std::vector<int64_t> b(n_bins, 0);
    for (double x : u[i]) ++b[std::min(n_bins - 1, static_cast<size_t>(x * static_cast<double>(n_bins)))];
    return b;
  }
  testing_support::ChiSquare at_index(size_t i) const {
    const std::vector<int64_t> b = bins(i);
    testing_support::ChiSquare c;
    c.add(std::vector<double>(b.size(), 1.0 / static_cast<double>(b.size())), b, 0.0);
    if (impossible_at[i] > 0) c.stat = INFINITY;
    return c;
  }
  // The sum over every index of the step.
  testing_support::ChiSquare total() const {
    testing_support::ChiSquare c;
    for (size_t i = 0; i < indices(); ++i) {
      const testing_support::ChiSquare ci = at_index(i);
      c.stat += ci.stat;
      c.df += ci.df;
      c.n += ci.n;
    }
    return c;
  }
  // The check passes when no index and not their sum exceeds its critical value.
  bool passes() const {
    for (size_t i = 0; i < indices(); ++i) {
      const testing_support::ChiSquare c = at_index(i);
      if (!(c.stat < c.critical())) return false;
    }
    const testing_support::ChiSquare all = total();
    return all.stat < all.critical();
  }
  int64_t count(size_t i, Emission kind) const { return kind_at[i][static_cast<size_t>(kind)]; }
  std::string describe() const {
    std::ostringstream s;
    for (size_t i = 0; i < indices(); ++i) {
      const testing_support::ChiSquare c = at_index(i);
      s << "\n  token " << i << " of a step: " << c.n << " tokens (" << kind_at[i][0] << " accepted drafts, "
        << kind_at[i][1] << " after a rejection, " << kind_at[i][2] << " bonus, " << kind_at[i][3]
        << " without a draft, " << impossible_at[i] << " impossible), chi-square " << c.stat << " df " << c.df
        << " (critical " << c.critical() << "); bins";
      for (int64_t b : bins(i)) s << ' ' << b;
    }
    return s.str();
  }
};

// Runs the PIT binning over logged trajectories against `target` with sampler settings `sp`.
// A token mask for a trajectory's token j (constrained generation): called for j = 0, 1, ... of
// each trajectory in turn; fills `allowed` (empty: no mask).
using EmissionMask = std::function<void(const Trajectory&, size_t j, std::vector<uint64_t>& allowed)>;

inline EmissionCheck check_emissions(const Model& target, const SamplerParams& sp,
                                     const std::vector<Trajectory>& runs, Simulated bug = Simulated::kNone,
                                     uint64_t seed = 4242, const EmissionMask& mask = {}) {
  std::vector<uint64_t> allowed;
  EmissionCheck out;
  Rng rng(seed);
  const int V = static_cast<int>(target.n_vocab());
  Sampler sampler(sp, V);
  std::vector<int32_t> order(static_cast<size_t>(V)), history;
  Batch b;
  for (const Trajectory& t : runs) {
    if (t.tokens.empty()) continue;
    Context ctx(target, {.n_ctx = static_cast<int64_t>(t.prompt.size() + t.tokens.size() + 8),
                         .n_batch = static_cast<int64_t>(t.prompt.size() + t.tokens.size()),
                         .n_threads = 1});
    b.clear();
    history = t.prompt;
    history.insert(history.end(), t.tokens.begin(), t.tokens.end());
    const size_t p0 = t.prompt.size();
    for (size_t i = 0; i + 1 < history.size(); ++i) b.add(history[i], static_cast<int32_t>(i), 0, i + 1 >= p0);
    ctx.decode(b);
    for (size_t j = 0; j < t.tokens.size(); ++j) {
      if (mask) mask(t, j, allowed);
      const Distribution& p = sampler.distribution(ctx.logits(static_cast<int64_t>(p0 - 1 + j)),
                                                   std::span<const int32_t>(history.data(), p0 + j), allowed);
      int32_t x = t.tokens[j];
      if (bug == Simulated::kArgmaxBonus && t.kind[j] == Emission::kBonus) x = p.top();
      if (bug == Simulated::kResampleP && t.kind[j] == Emission::kCorrection) x = sample(p, rng);
      // Ids by descending probability (ties: lower id first); u = mass before x + V * p(x).
      const auto ids = p.ids();
      order.assign(ids.begin(), ids.end());
      std::sort(order.begin(), order.end(), [&p](int32_t a, int32_t c) {
        return p.prob(a) > p.prob(c) || (p.prob(a) == p.prob(c) && a < c);
      });
      double before = 0.0, total = 0.0;
      bool found = false;
      for (int32_t id : order) {
        if (id == x) found = true;
        if (!found) before += p.prob(id);
        total += p.prob(id);
      }
      const size_t i = static_cast<size_t>(t.index[j]);
      if (out.u.size() <= i) {
        out.u.resize(i + 1);
        out.kind_at.resize(i + 1, {});
        out.impossible_at.resize(i + 1, 0);
      }
      ++out.kind_at[i][static_cast<size_t>(t.kind[j])];
      if (!found) {  // a token the target could not have emitted
        ++out.impossible_at[i];
        continue;
      }
      out.u[i].push_back((before + rng.uniform() * p.prob(x)) / total);
    }
  }
  return out;
}

// A sampled run through `drafter` at fixed draft lengths: 12 rounds of 8 sequences, each a
// 5-token prompt and 48 tokens, every emission logged. Returns the trajectories; `stats` gets
// the generator's.
// With `grammar`, every sequence is constrained by it (matched against `vocab`).
// `drafter_for` gives the drafter for the run's target context (drafters that read it: the Gemma 4
// assistant).
inline std::vector<Trajectory> sampled_rounds_for(const Model& m, const SamplerParams& sp,
                                                  const std::function<Drafter&(Context&)>& drafter_for,
                                                  GenerationStats* stats = nullptr,
                                                  std::shared_ptr<const Grammar> grammar = nullptr,
                                                  std::shared_ptr<const TokenVocab> vocab = nullptr,
                                                  int64_t* grammar_cut = nullptr) {
  constexpr int kParallel = 8;
  Context ctx(m, {.n_ctx = 1024, .n_batch = 128, .n_threads = 1, .n_seq_max = kParallel});
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.schedule = SpecSchedule::kFixed;
  gp.token_vocab = std::move(vocab);
  Generator gen(ctx, gp, {&drafter_for(ctx)});
  EmissionLog log(gen);
  for (int round = 0; round < 12; ++round) {
    for (int s = 0; s < kParallel; ++s) {
      const std::vector<int32_t> prompt = {72, static_cast<int32_t>(101 + s), 108, static_cast<int32_t>(40 + round), 111};
      SeqOptions o;
      o.seed = 1000003ull * round + s;
      o.grammar = grammar;
      gen.start(s, prompt, 48, o);
      log.start(s, prompt);
    }
    gen.run();
    for (int s = 0; s < kParallel; ++s) {
      log.finish(s);
      if (grammar_cut) *grammar_cut += gen.seq_stats(s).grammar_cut;
    }
  }
  if (stats) *stats = gen.stats();
  return log.trajectories();
}

inline std::vector<Trajectory> sampled_rounds(const Model& m, const SamplerParams& sp, Drafter& drafter,
                                              GenerationStats* stats = nullptr,
                                              std::shared_ptr<const Grammar> grammar = nullptr,
                                              std::shared_ptr<const TokenVocab> vocab = nullptr,
                                              int64_t* grammar_cut = nullptr) {
  return sampled_rounds_for(m, sp, [&](Context&) -> Drafter& { return drafter; }, stats, std::move(grammar),
                            std::move(vocab), grammar_cut);
}

// The test every sampling losslessness test makes of its run with drafts of length k: the check
// passes at every index 0..k of a step and in sum; at every index below k, accepted drafts and
// tokens after a rejection each occur at least min_count times, and so do bonus tokens at index
// k; and each simulated bug in `bugs` makes the check fail on the same run.
inline void expect_emissions_lossless(const Model& target, const SamplerParams& sp, const std::vector<Trajectory>& runs,
                                      size_t k, int64_t min_count, const std::vector<Simulated>& bugs) {
  const EmissionCheck c = check_emissions(target, sp, runs);
  ASSERT_EQ(c.indices(), k + 1) << c.describe();
  for (size_t i = 0; i <= k; ++i) {
    const testing_support::ChiSquare ci = c.at_index(i);
    EXPECT_LT(ci.stat, ci.critical()) << "token " << i << " of a step" << c.describe();
    if (i < k) {
      EXPECT_GE(c.count(i, Emission::kAccepted), min_count) << "index " << i << c.describe();
      EXPECT_GE(c.count(i, Emission::kCorrection), min_count) << "index " << i << c.describe();
    }
  }
  EXPECT_GE(c.count(k, Emission::kBonus), min_count) << c.describe();
  const testing_support::ChiSquare all = c.total();
  EXPECT_LT(all.stat, all.critical()) << c.describe();
  for (const Simulated bug : bugs) {
    const EmissionCheck b = check_emissions(target, sp, runs, bug);
    EXPECT_FALSE(b.passes()) << (bug == Simulated::kArgmaxBonus ? "argmax bonus tokens" : "p sampled after a rejection")
                             << " pass the check" << b.describe();
  }
}

}  // namespace fulgur::testing_support
