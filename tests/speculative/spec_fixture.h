// Helpers for the generator tests: the plain decoding loop the generator must reproduce (written
// independently of spec/, like the old `fulgur run` loop), and running the generator over a set
// of prompts.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "model/context.h"
#include "model/model_fixture.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "speculative/generator.h"

namespace fulgur::testing_support {

// Prefill the whole prompt in one batch, then one token per decode; sample with the Sampler over
// history = prompt + generated and an Rng seeded `seed`.
inline std::vector<int32_t> plain_generate(const Model& m, const std::vector<int32_t>& prompt, int n,
                                           const SamplerParams& sp, uint64_t seed,
                                           const std::function<bool(int32_t)>& is_eog = {}) {
  Context ctx(m, {.n_ctx = 512, .n_batch = 64, .n_threads = 1});
  Sampler sampler(sp, static_cast<int>(m.n_vocab()));
  Rng rng(seed);
  std::vector<int32_t> history = prompt, out;
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  ctx.decode(b);
  int64_t row = b.size() - 1;
  for (int i = 0; i < n; ++i) {
    const int32_t tok = sampler.sample(ctx.logits(row), history, rng);
    out.push_back(tok);
    history.push_back(tok);
    if ((is_eog && is_eog(tok)) || i + 1 == n) break;
    b.clear();
    b.add(tok, static_cast<int32_t>(history.size() - 1), 0, true);
    ctx.decode(b);
    row = 0;
  }
  return out;
}

// Runs prompts[i] as sequence i through one Generator; returns each sequence's output.
inline std::vector<std::vector<int32_t>> spec_generate(const Model& m, const SamplerParams& sp,
                                                       std::vector<Drafter*> drafters,
                                                       const std::vector<std::vector<int32_t>>& prompts,
                                                       const std::vector<int>& n_predict,
                                                       GenerationStats* stats = nullptr,
                                                       SpecParams spec = {},
                                                       std::function<double()> clock = {}) {
  Context ctx(m, {.n_ctx = 1024, .n_batch = 64, .n_threads = 1,
                  .n_seq_max = std::max(4, static_cast<int>(prompts.size()))});
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec = spec;
  gp.clock = std::move(clock);
  Generator gen(ctx, gp, std::move(drafters));
  for (size_t i = 0; i < prompts.size(); ++i) gen.start(static_cast<int>(i), prompts[i], n_predict[i]);
  gen.run();
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < prompts.size(); ++i) out.push_back(gen.output(static_cast<int>(i)));
  if (stats) *stats = gen.stats();
  return out;
}

inline SamplerParams greedy_sampling() {
  SamplerParams sp;
  sp.temperature = 0.0f;
  return sp;
}

// Prompts: a plain one, two repetitive ones (n-gram drafters find matches), a one-token one.
// Tokens to generate for each of test_prompts(): uneven, so sequences finish at different steps.
inline const std::vector<int> kNPredict = {40, 48, 33, 25};

inline std::vector<std::vector<int32_t>> test_prompts() {
  std::vector<int32_t> rep;
  for (int r = 0; r < 6; ++r) {
    for (int32_t t : {40, 41, 42, 43, 44}) rep.push_back(t);
  }
  return {{72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 35, 32, 100, 101, 102},
          rep,
          {100, 101, 100, 101, 100, 101, 100, 101, 100, 101, 100, 101},
          {7}};
}

}  // namespace fulgur::testing_support
