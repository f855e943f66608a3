// Greedy decoding of test_prompts() under a grammar through one Generator, with or without a
// drafter, and the counts of what the drafter's chains became (verified, accepted, cut by the
// grammar): shared by the drafters' grammar tests (test_eagle3.cpp, test_mtp.cpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "grammar/grammar.h"
#include "spec_fixture.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/token_bytes.h"
#include "tokenizer/tokenizer.h"

namespace fulgur::testing_support {

struct Constrained {
  std::vector<std::vector<int32_t>> out;
  int64_t drafts = 0;    // steps that verified a non-empty draft
  int64_t drafted = 0;   // drafted tokens verified
  int64_t accepted = 0;  // drafted tokens kept
  int64_t cut = 0;       // drafted tokens the grammar cut before verification
};

// Greedy decoding of test_prompts() by `m` under `grammar` through one Generator, every step
// through the drafter when there is one.
inline Constrained generate_constrained(const Model& m, Drafter* d, const std::shared_ptr<const Grammar>& grammar) {
  const Tokenizer tok(read_vocab(m.gguf()));
  Context ctx(m, {.n_ctx = 1024, .n_batch = 64, .n_threads = 1, .n_seq_max = 4});
  GeneratorParams gp;
  gp.sampling = greedy_sampling();
  gp.spec.schedule = SpecSchedule::kFixed;
  gp.is_eog = [&tok](int32_t id) { return tok.is_eog(id); };
  gp.token_vocab = std::make_shared<TokenVocab>(token_bytes(tok, m.n_vocab()), eog_ids(tok, m.n_vocab()));
  std::vector<Drafter*> ds;
  if (d != nullptr) ds.push_back(d);
  Generator gen(ctx, gp, ds);
  const auto prompts = test_prompts();
  for (size_t i = 0; i < prompts.size(); ++i) {
    SeqOptions o;
    o.grammar = grammar;
    gen.start(static_cast<int>(i), prompts[i], kNPredict[i], o);
  }
  gen.run();
  Constrained r;
  for (size_t i = 0; i < prompts.size(); ++i) {
    r.out.push_back(gen.output(static_cast<int>(i)));
    const SeqStats& s = gen.seq_stats(static_cast<int>(i));
    r.drafts += s.drafts;
    r.drafted += s.drafted;
    r.accepted += s.accepted;
    r.cut += s.grammar_cut;
  }
  return r;
}

inline void print_counts(const char* what, const Constrained& r) {
  std::printf("[%s] %lld drafts, %lld drafted tokens verified, %lld accepted, %lld cut by the grammar\n", what,
              static_cast<long long>(r.drafts), static_cast<long long>(r.drafted), static_cast<long long>(r.accepted),
              static_cast<long long>(r.cut));
}

}  // namespace fulgur::testing_support
