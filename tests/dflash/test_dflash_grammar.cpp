// A block drafter under a grammar (the server's response_format / tool_choice): the generator cuts
// a block at the first drafted token the grammar rejects, before verification, and verifies the
// rest against the masked target, so greedy output is the same with and without the drafter. Run
// with a random DFlash draft (most blocks cut or rejected early) and with the same draft replaying
// the constrained continuation with a wrong token at a cycling position (drafts accepted, and
// the wrong tokens cut by the grammar or rejected by the target).
#include <cstdio>
#include <memory>

#include "dflash/dflash_fixture.h"
#include "grammar/gbnf_parser.h"
#include "grammar/token_mask.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/token_bytes.h"

namespace fulgur::dflash_test {
namespace {

struct Constrained {
  std::vector<std::vector<int32_t>> out;
  int64_t accepted = 0, cut = 0;
};

Constrained generate_constrained(Drafter* d, const std::shared_ptr<const Grammar>& grammar, int n_seqs,
                                 int n_predict) {
  const Model& target = *env().target;
  const Tokenizer tok(read_vocab(target.gguf()));
  Context ctx(target, {.n_ctx = 1024, .n_batch = 512, .n_threads = 1, .n_seq_max = 4});
  GeneratorParams gp;
  gp.sampling.temperature = 0.0f;           // greedy
  gp.spec.schedule = SpecSchedule::kFixed;  // every step through the drafter
  gp.is_eog = [&tok](int32_t id) { return tok.is_eog(id); };
  gp.token_vocab = std::make_shared<TokenVocab>(token_bytes(tok, target.n_vocab()), eog_ids(tok, target.n_vocab()));
  std::vector<Drafter*> ds;
  if (d != nullptr) ds.push_back(d);
  Generator g(ctx, gp, ds);
  for (int s = 0; s < n_seqs; ++s) {
    SeqOptions o;
    o.grammar = grammar;
    g.start(s, prompt_tokens(s, 9 + 3 * s), n_predict, o);
  }
  g.run();
  Constrained r;
  for (int s = 0; s < n_seqs; ++s) {
    r.out.push_back(g.output(s));
    r.accepted += g.seq_stats(s).accepted;
    r.cut += g.seq_stats(s).grammar_cut;
  }
  return r;
}

TEST(DflashGrammar, GreedyUnderAGrammarIsTheSameWithABlockDrafter) {
  const auto grammar = std::make_shared<Grammar>(parse_gbnf(R"(root ::= "[" item ("," item)* "]"
item ::= [a-f]+ | "true" | "null")"));
  const std::string path = make_draft("grammar_dspark", draft_options("speculators", "gated"));
  DflashDrafter d(path, *env().target, {.n_threads = 1});
  for (int n_seqs : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << n_seqs << " sequences");
    const Constrained plain = generate_constrained(nullptr, grammar, n_seqs, 40);
    for (const auto& out : plain.out) {
      const std::string text = Tokenizer(read_vocab(env().target->gguf())).decode(out, false);
      ASSERT_FALSE(text.empty());
      EXPECT_EQ(text[0], '[') << text;
    }
    const Constrained random = generate_constrained(&d, grammar, n_seqs, 40);
    EXPECT_EQ(random.out, plain.out) << "a random block draft";

    testing_support::ControlledDrafter controlled(d, static_cast<int>(env().n_vocab), {.corrupt = true});
    for (int s = 0; s < n_seqs; ++s) controlled.set_reference(s, plain.out[s], 9 + 3 * s);
    const Constrained replayed = generate_constrained(&controlled, grammar, n_seqs, 40);
    EXPECT_EQ(replayed.out, plain.out) << "the constrained continuation replayed with wrong tokens";
    std::printf("%d sequences: random draft %lld accepted, %lld cut; replayed %lld accepted, %lld cut\n", n_seqs,
                static_cast<long long>(random.accepted), static_cast<long long>(random.cut),
                static_cast<long long>(replayed.accepted), static_cast<long long>(replayed.cut));
    EXPECT_GT(replayed.accepted, 0);
    EXPECT_GT(replayed.cut + random.cut, 0) << "some drafted token was cut by the grammar";
  }
}

}  // namespace
}  // namespace fulgur::dflash_test
