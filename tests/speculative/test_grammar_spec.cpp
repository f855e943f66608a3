// Constrained generation through the Generator on generated models:
//  * a random-weight model under a JSON schema emits JSON that parses and has the schema's keys
//    and types (greedy and sampled);
//  * greedy output under a grammar is the same with and without every kind of drafter: n-gram,
//    the target as its own draft model, and the replay drafter fed the constrained output (every
//    draft accepted) or planting wrong tokens (drafts cut by the grammar before verification);
//  * sampled output under a grammar, drafted by a tempered copy of the target, has the masked
//    target's distribution at every index of a step (chi-square; emission_check.h), and the same
//    run checked against the unmasked target fails. (This test caught that a draft cut by the
//    grammar must end in the residual of the cut token's q, not a fresh sample of p: the cut
//    token is a rejection, and sampling p there made token 0 of a step fail at chi-square 62.)
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "controlled_drafters.h"
#include "emission_check.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "spec_fixture.h"
#include "speculative/drafters/draft_model.h"
#include "speculative/drafters/mtp.h"
#include "speculative/drafters/ngram.h"
#include "speculative/drafters/replay.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/token_bytes.h"

namespace fulgur {
namespace {

using testing_support::greedy_sampling;
using testing_support::tiny_model;

// Bounded strings, numbers and whitespace: a random model cannot wander off for ever.
constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 6},
    "age": {"type": "integer"},
    "ok": {"type": "boolean"},
    "tags": {"type": "array", "items": {"enum": ["a", "bc"]}, "maxItems": 2},
    "kind": {"enum": ["x", "y", null]}
  },
  "required": ["name", "age", "ok", "kind"]})";

struct Fixture {
  explicit Fixture(DType type, const std::string& arch = "qwen3", bool mtp = false)
      : model(tiny_model(arch, type, 1, mtp)), tok(read_vocab(model.gguf())) {
    vocab = std::make_shared<TokenVocab>(token_bytes(tok, model.n_vocab()), eog_ids(tok, model.n_vocab()));
  }
  Model model;
  Tokenizer tok;
  std::shared_ptr<const TokenVocab> vocab;
};

std::shared_ptr<const Grammar> schema_grammar() {
  return std::make_shared<Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(kSchema)));
}

struct GrammarRun {
  std::vector<std::vector<int32_t>> out;
  std::vector<SeqStats> stats;
};

GrammarRun generate(Fixture& f, const SamplerParams& sp, std::vector<Drafter*> drafters,
             const std::shared_ptr<const Grammar>& grammar, const std::vector<std::vector<int32_t>>& prompts,
             int n_predict, SpecSchedule schedule = SpecSchedule::kFixed) {
  Context ctx(f.model, {.n_ctx = 2048, .n_batch = 64, .n_threads = 1, .n_seq_max = 4});
  GeneratorParams gp;
  gp.sampling = sp;
  gp.spec.schedule = schedule;
  gp.is_eog = [&f](int32_t id) { return f.tok.is_eog(id); };
  gp.token_vocab = f.vocab;
  Generator gen(ctx, gp, std::move(drafters));
  for (size_t i = 0; i < prompts.size(); ++i) {
    SeqOptions o;
    o.grammar = grammar;
    o.seed = 77 + i;
    gen.start(static_cast<int>(i), prompts[i], n_predict, o);
  }
  gen.run();
  GrammarRun r;
  for (size_t i = 0; i < prompts.size(); ++i) {
    r.out.push_back(gen.output(static_cast<int>(i)));
    r.stats.push_back(gen.seq_stats(static_cast<int>(i)));
  }
  return r;
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100}, {123, 34, 110}, {7}};

void expect_valid_document(const Fixture& f, const std::vector<int32_t>& out) {
  ASSERT_FALSE(out.empty());
  ASSERT_TRUE(f.tok.is_eog(out.back())) << "the grammar completes and the model ends it";
  const std::string text = f.tok.decode(std::vector<int32_t>(out.begin(), out.end() - 1), false);
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(text)) << text;
  ASSERT_TRUE(doc.is_object()) << text;
  ASSERT_TRUE(doc.contains("name") && doc["name"].is_string()) << text;
  EXPECT_LE(doc["name"].get<std::string>().size(), 6u * 4) << text;
  ASSERT_TRUE(doc.contains("age") && doc["age"].is_number_integer()) << text;
  ASSERT_TRUE(doc.contains("ok") && doc["ok"].is_boolean()) << text;
  ASSERT_TRUE(doc.contains("kind")) << text;
  EXPECT_TRUE(doc["kind"].is_null() || doc["kind"] == "x" || doc["kind"] == "y") << text;
  if (doc.contains("tags")) {
    ASSERT_TRUE(doc["tags"].is_array()) << text;
    EXPECT_LE(doc["tags"].size(), 2u);
  }
  for (const auto& [key, v] : doc.items()) {
    EXPECT_TRUE(key == "name" || key == "age" || key == "ok" || key == "tags" || key == "kind") << text;
  }
}

TEST(GrammarGeneration, RandomModelWritesJsonThatFitsTheSchema) {
  Fixture f(DType::kQ8_0);
  const auto g = schema_grammar();
  for (bool sampled : {false, true}) {
    SamplerParams sp = greedy_sampling();
    if (sampled) {
      sp = SamplerParams{};
      sp.temperature = 1.0f;
    }
    const GrammarRun r = generate(f, sp, {}, g, kPrompts, 1500);
    for (const auto& out : r.out) expect_valid_document(f, out);
  }
}

TEST(GrammarGeneration, GreedyIsTheSameWithEveryDrafter) {
  Fixture f(DType::kF32);
  const auto g = schema_grammar();
  const SamplerParams sp = greedy_sampling();
  const int n = 1500;
  const GrammarRun want = generate(f, sp, {}, g, kPrompts, n);
  for (const auto& out : want.out) expect_valid_document(f, out);

  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  EXPECT_EQ(generate(f, sp, {&ngram}, g, kPrompts, n).out, want.out) << "n-gram";

  DraftModelParams dp;
  dp.n_max = 4;
  dp.context = {.n_ctx = 2048, .n_batch = 64, .n_threads = 1, .n_seq_max = 4};
  DraftModelDrafter self(f.model, f.model, dp);
  EXPECT_EQ(generate(f, sp, {&self}, g, kPrompts, n).out, want.out) << "the target as its own draft";

  // The replay drafter proposes the constrained greedy output: drafts accepted. At rate 0.5 it
  // plants wrong tokens (reference + 1), which the grammar mostly rejects: drafts cut.
  for (float rate : {1.0f, 0.5f}) {
    ReplayDrafter replay({rate, rate * rate, rate * rate * rate, rate * rate * rate * rate},
                         static_cast<int>(f.model.n_vocab()), 5);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      replay.set_reference(static_cast<int>(i), want.out[i], static_cast<int32_t>(kPrompts[i].size()));
    }
    const GrammarRun r = generate(f, sp, {&replay}, g, kPrompts, n);
    EXPECT_EQ(r.out, want.out) << "replay at rate " << rate;
    int64_t accepted = 0, cut = 0;
    for (const SeqStats& s : r.stats) {
      accepted += s.accepted;
      cut += s.grammar_cut;
    }
    if (rate == 1.0f) {
      EXPECT_GT(accepted, 100) << "the constrained continuation is accepted";
      EXPECT_EQ(cut, 0);
    } else {
      EXPECT_GT(cut, 20) << "wrong tokens are cut by the grammar before verification";
      EXPECT_GT(accepted, 20);
    }
  }
}

// The same on a Gated-DeltaNet hybrid drafted by its own MTP block: every draft the grammar cuts
// or the target rejects rolls the recurrent state back, and the output stays the plain
// constrained greedy output.
TEST(GrammarGeneration, GreedyIsTheSameWithMtpOnARecurrentTarget) {
  Fixture f(DType::kF32, "qwen35", true);
  const auto g = schema_grammar();
  const SamplerParams sp = greedy_sampling();
  const int n = 400;
  const GrammarRun want = generate(f, sp, {}, g, kPrompts, n);
  for (const auto& out : want.out) expect_valid_document(f, out);
  ChainParams p;
  p.n_max = 3;
  p.context = {.n_ctx = 2048, .n_batch = 64, .n_threads = 1, .n_seq_max = 4};
  auto mtp = make_mtp_drafter(f.model, p);
  const GrammarRun r = generate(f, sp, {mtp.get()}, g, kPrompts, n);
  EXPECT_EQ(r.out, want.out);
  int64_t drafted = 0, cut = 0;
  for (const SeqStats& s : r.stats) {
    drafted += s.drafted;
    cut += s.grammar_cut;
  }
  std::printf("MTP under the grammar: %lld drafted tokens verified, %lld cut by the grammar\n",
              static_cast<long long>(drafted), static_cast<long long>(cut));
  EXPECT_GT(drafted, 0);
}

// logprobs under a grammar are the constrained distribution's: log-softmax of the target's
// logits over the tokens the grammar allows at that point (checked against a plain decode of the
// same tokens, masked here), and the same whichever drafter proposed the tokens.
TEST(GrammarGeneration, LogprobsAreTheMaskedTargetsWithAndWithoutDrafters) {
  Fixture f(DType::kF32);
  const auto g = schema_grammar();
  const std::vector<int32_t> prompt = kPrompts[0];
  const int n_predict = 40;
  const auto run = [&](std::vector<Drafter*> drafters) {
    Context ctx(f.model, {.n_ctx = 1024, .n_batch = 64, .n_threads = 1, .n_seq_max = 1});
    GeneratorParams gp;
    gp.sampling = greedy_sampling();
    gp.spec.schedule = SpecSchedule::kFixed;
    gp.is_eog = [&f](int32_t id) { return f.tok.is_eog(id); };
    gp.token_vocab = f.vocab;
    Generator gen(ctx, gp, std::move(drafters));
    std::vector<TokenLogprobs> got;
    gen.on_tokens = [&](int seq, std::span<const int32_t>) {
      for (const TokenLogprobs& lp : gen.last_logprobs(seq)) got.push_back(lp);
    };
    SeqOptions o;
    o.grammar = g;
    o.n_logprobs = 4;
    gen.start(0, prompt, n_predict, o);
    gen.run();
    EXPECT_EQ(got.size(), gen.output(0).size());
    return got;
  };
  const std::vector<TokenLogprobs> plain = run({});
  ASSERT_EQ(plain.size(), static_cast<size_t>(n_predict));

  // Reference: the logits of a plain decode of prompt + output, masked by the grammar walked
  // along the output.
  Context ref(f.model, {.n_ctx = 1024, .n_batch = 256, .n_threads = 1});
  Batch b;
  std::vector<int32_t> all = prompt;
  for (const TokenLogprobs& t : plain) all.push_back(t.token);
  for (size_t i = 0; i < all.size(); ++i) b.add(all[i], static_cast<int32_t>(i), 0, i + 1 >= prompt.size());
  ref.decode(b);
  GrammarMatcher m(g);
  std::vector<uint64_t> allowed;
  int n_forced = 0;
  for (size_t j = 0; j < plain.size(); ++j) {
    const int64_t n_allowed = TokenMasker().fill(m, *f.vocab, allowed);
    const float* logits = ref.logits(static_cast<int64_t>(prompt.size() - 1 + j));  // after prompt + j tokens
    const auto ok = [&](int32_t id) { return (allowed[static_cast<size_t>(id) / 64] >> (id % 64) & 1u) != 0; };
    double mx = -INFINITY, z = 0;
    for (int32_t i = 0; i < static_cast<int32_t>(f.model.n_vocab()); ++i) {
      if (ok(i)) mx = std::max(mx, double(logits[i]));
    }
    for (int32_t i = 0; i < static_cast<int32_t>(f.model.n_vocab()); ++i) {
      if (ok(i)) z += std::exp(double(logits[i]) - mx);
    }
    const auto lp = [&](int32_t id) { return float(double(logits[id]) - mx - std::log(z)); };
    EXPECT_NEAR(plain[j].logprob, lp(plain[j].token), 1e-4) << "token " << j;
    EXPECT_EQ(plain[j].top.size(), static_cast<size_t>(std::min<int64_t>(4, n_allowed))) << "token " << j;
    for (const auto& [id, v] : plain[j].top) {
      EXPECT_TRUE(ok(id)) << "token " << j << ": a top alternative the grammar forbids";
      EXPECT_NEAR(v, lp(id), 1e-4) << "token " << j;
    }
    n_forced += n_allowed == 1;
    ASSERT_TRUE(f.vocab->accept(m, plain[j].token));
  }
  EXPECT_GT(n_forced, 0) << "the schema's keys leave one token allowed somewhere: logprob 0 there";

  NgramDrafter ngram({.size_n = 4, .min_n = 1, .size_m = 6});
  DraftModelParams dp;
  dp.n_max = 4;
  dp.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1, .n_seq_max = 1};
  DraftModelDrafter self(f.model, f.model, dp);
  for (Drafter* d : std::vector<Drafter*>{&ngram, &self}) {
    const std::vector<TokenLogprobs> drafted = run({d});
    ASSERT_EQ(drafted.size(), plain.size());
    for (size_t j = 0; j < plain.size(); ++j) {
      EXPECT_EQ(drafted[j].token, plain[j].token) << "token " << j;
      EXPECT_NEAR(drafted[j].logprob, plain[j].logprob, 1e-4) << "token " << j;
      ASSERT_EQ(drafted[j].top.size(), plain[j].top.size());
      for (size_t k = 0; k < plain[j].top.size(); ++k) {
        EXPECT_EQ(drafted[j].top[k].first, plain[j].top[k].first);
        EXPECT_NEAR(drafted[j].top[k].second, plain[j].top[k].second, 1e-4);
      }
    }
  }
}

// A grammar that forbids a good share of the vocabulary's mass (every token with a letter a-m)
// but lets most drafts through, so that steps accept drafts, cut them and reject them.
TEST(GrammarGeneration, SampledDraftingKeepsTheMaskedTargetsDistribution) {
  Fixture f(DType::kF32);
  const auto g = std::make_shared<Grammar>(parse_gbnf("root ::= [^a-m]*"));
  const std::string draft_path = testing_support::tempered_copy(tiny_model("qwen3", DType::kF32, 1), 1.5f);
  Model draft(draft_path);
  DraftModelParams dp;
  dp.n_max = 3;
  dp.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1, .n_seq_max = 8};
  DraftModelDrafter drafter(f.model, draft, dp);
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  GenerationStats stats;
  int64_t cut = 0;
  const auto runs = testing_support::sampled_rounds(f.model, sp, drafter, &stats, g, f.vocab, &cut);
  GrammarMatcher m(g);
  const testing_support::EmissionMask mask = [&](const testing_support::Trajectory& t, size_t j,
                                                 std::vector<uint64_t>& allowed) {
    if (j == 0) m = GrammarMatcher(g);
    TokenMasker().fill(m, *f.vocab, allowed);
    ASSERT_TRUE(f.vocab->accept(m, t.tokens[j])) << "an emitted token the grammar rejects";
  };
  const auto c = testing_support::check_emissions(f.model, sp, runs, testing_support::Simulated::kNone, 4242, mask);
  EXPECT_TRUE(c.passes()) << c.describe();
  EXPECT_GE(c.count(0, testing_support::Emission::kAccepted), 100) << c.describe();
  EXPECT_GE(c.count(0, testing_support::Emission::kCorrection), 50) << c.describe();
  EXPECT_GT(cut, 50);
  // The unmasked target is not what was sampled: the check has the power to see it.
  const auto unmasked = testing_support::check_emissions(f.model, sp, runs);
  EXPECT_FALSE(unmasked.passes()) << unmasked.describe();
}

}  // namespace
}  // namespace fulgur
