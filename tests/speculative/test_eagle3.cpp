// The EAGLE-3 drafter (speculative/drafters/eagle3.h) on a tiny generated qwen3 target and EAGLE-3
// drafts synthesized as Hugging Face checkpoints (speculators and SpecForge forms, full and
// reduced vocabulary) and converted by `fulgur convert`'s own code:
//  * greedy output identical with and without the draft, 1 and 4 sequences, with the random
//    draft's own chains and with its drafts replaced by the target's continuation corrupted at a
//    cycling position (accepted at every position);
//  * after every step the drafter's state is that of a fresh drafter given the committed history
//    at once (the rows paired (x_{P+1}, g_P) whichever step drafted);
//  * the two checkpoint forms convert to drafts that draft the same tokens; the reduced
//    vocabulary drafts only tokens d2t maps to, through the converted absolute ids, and its draft
//    distribution is the full vocabulary's restricted to them;
//  * a head built to agree with its target is accepted at every position of its chains;
//  * under a grammar, greedy output is the plain constrained output: with a random draft's chains
//    (cut by the grammar), with the constrained continuation replayed with wrong tokens (accepted,
//    cut, rejected) and with the agreeing head's own chains (accepted, cut);
//  * sampled output has the target's distribution (every emitted token checked);
//  * bad input (files and configs) fails naming what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <span>

#include "constrained_generation.h"
#include "controlled_drafters.h"
#include "convert/convert_model.h"
#include "core/error.h"
#include "emission_check.h"
#include "gguf_edit.h"
#include "gguf/gguf_reader.h"
#include "grammar/gbnf_parser.h"
#include "sampling/rng.h"
#include "speculative/drafters/eagle3.h"
#include "spec_fixture.h"
#include "synth/draft_synth.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/token_bytes.h"

namespace fulgur {
namespace {

using testing_support::Constrained;
using testing_support::ControlledDrafter;
using testing_support::generate_constrained;
using testing_support::greedy_sampling;
using testing_support::plain_generate;
using testing_support::spec_generate;
using testing_support::test_prompts;
using testing_support::tiny_model;

using testing_support::kNPredict;

const std::string& target_path() {
  static const std::string p = tiny_model("qwen3", DType::kF32, 1);
  return p;
}
const Model& target() {
  static const Model m(target_path());
  return m;
}

DraftSynthOptions eagle3_options(const std::string& format, int64_t draft_vocab = 0, const Model& t = target()) {
  DraftSynthOptions o;
  o.format = format;
  o.n_embd = t.n_embd();
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 32;
  o.n_ff = 128;
  o.n_vocab = t.n_vocab();
  o.draft_vocab = draft_vocab;
  o.target_layer_ids = {1, 2, t.n_layer()};  // the last: the target's final pre-norm hidden state
  o.rope_theta = 10000.0;
  o.seed = 5;
  return o;
}

// Synthesizes the checkpoint and converts it (with the target, whose vocabulary it carries).
std::string make_eagle3(const std::string& name, DraftSynthOptions o, const std::string& target = target_path()) {
  const std::string dir = ::testing::TempDir() + "/fulgur_eagle3_" + name;
  o.out_dir = dir;
  synth_eagle3_checkpoint(o);
  ConvertOptions c;
  c.in_dir = dir;
  c.out_path = dir + ".gguf";
  c.type = DType::kF32;
  c.progress = false;
  c.threads = 1;
  c.target = target;
  convert_hf_to_gguf(c);
  return c.out_path;
}

std::unique_ptr<ChainDrafter> load(const std::string& path, int n_max, const Model& t = target()) {
  ChainParams p;
  p.n_max = n_max;
  p.context = {.n_ctx = 1024, .n_batch = 64, .n_threads = 1};
  return make_eagle3_drafter(t, path, p);
}

std::vector<std::vector<int32_t>> plain_outputs(const SamplerParams& sp, const Model& t = target()) {
  std::vector<std::vector<int32_t>> out;
  const auto prompts = test_prompts();
  for (size_t i = 0; i < kNPredict.size(); ++i) {
    out.push_back(plain_generate(t, prompts[i], kNPredict[i], sp, sp.seed + i));
  }
  return out;
}

// Each draft the inner drafter made equals the draft of a fresh drafter given the committed
// history at once.
void expect_state_matches_history(const std::string& path, const ControlledDrafter& controlled,
                                  const std::vector<std::vector<int32_t>>& out, int n_max, const std::string& what) {
  testing_support::expect_drafts_match_history(target(), controlled, test_prompts(), out, greedy_sampling(),
                                               [&] { return load(path, n_max); }, what);
}

struct Case {
  const char* name;
  const char* format;
  int64_t draft_vocab;
};

class Eagle3Lossless : public ::testing::TestWithParam<Case> {};

TEST_P(Eagle3Lossless, GreedyIsIdenticalWithAndWithoutTheDraft) {
  const Case c = GetParam();
  const std::string path = make_eagle3(c.name, eagle3_options(c.format, c.draft_vocab));
  const SamplerParams sp = greedy_sampling();
  const auto prompts = test_prompts();
  const auto want = plain_outputs(sp);
  const int V = static_cast<int>(target().n_vocab());
  const SpecParams fixed{.schedule = SpecSchedule::kFixed};
  GenerationStats st;
  for (int n_max : {1, 3}) {
    const std::string what = std::string(c.name) + ", n_max " + std::to_string(n_max);
    auto d = load(path, n_max);
    EXPECT_EQ(d->name(), "draft-eagle3");
    EXPECT_EQ(spec_generate(target(), sp, {d.get()}, prompts, kNPredict, &st, fixed), want) << what;
    EXPECT_GT(st.drafters.at(0).drafts, 60) << what;
    const auto one = spec_generate(target(), sp, {d.get()}, {prompts[1]}, {kNPredict[1]}, &st, fixed);
    EXPECT_EQ(one[0], want[1]) << what << ", alone";
    ControlledDrafter controlled(*d, V, {.corrupt = true});
    for (size_t i = 0; i < prompts.size(); ++i) {
      controlled.set_reference(static_cast<int>(i), want[i], static_cast<int32_t>(prompts[i].size()));
    }
    EXPECT_EQ(spec_generate(target(), sp, {&controlled}, prompts, kNPredict, &st, fixed), want) << what;
    EXPECT_EQ(st.drafters.at(0).accepted_at, controlled.expected_accepted_at()) << what;
    for (size_t i = 0; i < static_cast<size_t>(n_max); ++i) EXPECT_GT(st.drafters.at(0).accepted_at.at(i), 0) << what;
    expect_state_matches_history(path, controlled, want, n_max, what);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, Eagle3Lossless,
                         ::testing::Values(Case{"speculators", "speculators", 0}, Case{"specforge", "specforge", 0},
                                           Case{"reduced", "speculators", 200}),
                         [](const auto& info) { return std::string(info.param.name); });

// On the tiny gemma4 target (sliding layers with a 16-token window, shorter than the runs;
// scaled embeddings; soft-capped logits), with taps after a sliding and a full layer and the
// final hidden state, and a reduced vocabulary: greedy output equals plain decoding, alone and
// with its drafts replaced by the target's continuation corrupted at a cycling position
// (accepted at every draft position; the window's cells rolled back under the rejections).
TEST(Eagle3, LosslessOnAGemma4Target) {
  static const std::string gemma_path = tiny_model("gemma4", DType::kF32, 1);
  static const Model gemma(gemma_path);
  DraftSynthOptions o = eagle3_options("speculators", gemma.n_vocab() / 2, gemma);
  o.target_layer_ids = {2, 4, gemma.n_layer()};
  const std::string path = make_eagle3("gemma4", o, gemma_path);
  const SamplerParams sp = greedy_sampling();
  const auto prompts = test_prompts();
  const auto want = plain_outputs(sp, gemma);
  const SpecParams fixed{.schedule = SpecSchedule::kFixed};
  GenerationStats st;
  const int n_max = 3;
  auto d = load(path, n_max, gemma);
  EXPECT_EQ(spec_generate(gemma, sp, {d.get()}, prompts, kNPredict, &st, fixed), want);
  EXPECT_GT(st.drafters.at(0).drafts, 60);
  ControlledDrafter controlled(*d, static_cast<int>(gemma.n_vocab()), {.corrupt = true});
  for (size_t i = 0; i < prompts.size(); ++i) {
    controlled.set_reference(static_cast<int>(i), want[i], static_cast<int32_t>(prompts[i].size()));
  }
  EXPECT_EQ(spec_generate(gemma, sp, {&controlled}, prompts, kNPredict, &st, fixed), want);
  EXPECT_EQ(st.drafters.at(0).accepted_at, controlled.expected_accepted_at());
  for (size_t i = 0; i < static_cast<size_t>(n_max); ++i) {
    EXPECT_GT(st.drafters.at(0).accepted_at.at(i), 0) << "draft position " << i;
    EXPECT_LT(st.drafters.at(0).accepted_at.at(i), st.drafters.at(0).drafted_at.at(i)) << "draft position " << i;
  }
}

// The same weights in both checkpoint forms draft the same tokens; a reduced vocabulary drafts
// only the target ids d2t names (every other id here), stored as absolute I64 ids.
TEST(Eagle3, FormsAgreeAndD2tMapsToTargetIds) {
  const std::string a = make_eagle3("agree_spec", eagle3_options("speculators"));
  const std::string b = make_eagle3("agree_sf", eagle3_options("specforge"));
  const std::string r = make_eagle3("agree_reduced", eagle3_options("speculators", 200));
  const GgufReader g(r);
  const GgufTensorInfo* d2t = g.find_tensor("d2t");
  ASSERT_NE(d2t, nullptr);
  EXPECT_EQ(d2t->type, DType::kI64);
  ASSERT_EQ(d2t->ne[0], 200);
  for (int64_t i = 0; i < 200; ++i) {
    int64_t id = 0;
    std::memcpy(&id, d2t->data + i * 8, 8);
    ASSERT_EQ(id, 2 * i) << i;
  }
  EXPECT_EQ(g.get_string("general.architecture"), "eagle3");
  EXPECT_EQ(g.get_int_array<int64_t>("eagle3.target_layers"),
            (std::vector<int64_t>{1, 2, target().n_layer()}));
  const SamplerParams sp = greedy_sampling();
  const auto prompts = test_prompts();
  int compared = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto& p = prompts[s];
    if (p.size() < 3) continue;
    ++compared;
    Draft da, db, dr;
    for (auto [path, out] : {std::pair{a, &da}, std::pair{b, &db}, std::pair{r, &dr}}) {
      Context ctx(target(), {.n_ctx = 256, .n_batch = 256, .n_threads = 1});
      auto d = load(path, 4);
      testing_support::commit_history(*d, ctx, 0, p, static_cast<int32_t>(p.size()) - 1);
      DraftRequest req;
      req.anchor = p.back();
      req.anchor_pos = static_cast<int32_t>(p.size()) - 1;
      req.n_max = 4;
      req.sampling = &sp;
      d->draft(req, *out);
    }
    EXPECT_EQ(da.tokens.size(), 4u);
    EXPECT_EQ(da.tokens, db.tokens) << "prompt " << s;
    ASSERT_EQ(dr.tokens.size(), 4u);
    for (int32_t t : dr.tokens) EXPECT_EQ(t % 2, 0) << "token " << t << " is not in the reduced vocabulary";
  }
  EXPECT_GE(compared, 3);
}

// The reduced vocabulary's draft is the full one's over the ids d2t names: the two checkpoints
// share every weight (synth draws each tensor by name; the reduced lm_head is the full one's rows
// at the kept ids, 0, 2, ..., 398), so sampled drafting's q over the target's ids must be the full
// draft's q restricted to those ids and renormalised. A d2t scatter one id off (a mutant in
// scripts/mutants.sh) moves that mass onto the wrong ids, which greedy drafts of kept ids alone
// do not show.
TEST(Eagle3, ReducedVocabularyDraftIsTheFullDraftThroughD2t) {
  const std::string full = make_eagle3("d2t_full", eagle3_options("speculators"));
  const std::string reduced = make_eagle3("d2t_reduced", eagle3_options("speculators", 200));
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  const auto prompts = test_prompts();
  int compared = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto& p = prompts[s];
    if (p.size() < 3) continue;
    Draft df, dr;
    for (auto [path, out] : {std::pair{full, &df}, std::pair{reduced, &dr}}) {
      Context ctx(target(), {.n_ctx = 256, .n_batch = 256, .n_threads = 1});
      auto d = load(path, 1);
      testing_support::commit_history(*d, ctx, 0, p, static_cast<int32_t>(p.size()) - 1);
      Rng rng(7);
      DraftRequest req;
      req.anchor = p.back();
      req.anchor_pos = static_cast<int32_t>(p.size()) - 1;
      req.n_max = 1;
      req.sampling = &sp;
      req.rng = &rng;
      d->draft(req, *out);
    }
    ASSERT_EQ(df.q.size(), 1u) << "prompt " << s;
    ASSERT_EQ(dr.q.size(), 1u) << "prompt " << s;
    const std::span<const float> qf = df.q[0].dense(), qr = dr.q[0].dense();
    ASSERT_EQ(qf.size(), qr.size());
    const auto is_kept = [](size_t id) { return id % 2 == 0 && id < 2 * 200; };  // d2t: 0, 2, ..., 398
    double kept = 0.0;
    for (size_t i = 0; i < qf.size(); ++i) kept += is_kept(i) ? qf[i] : 0.0;
    ASSERT_GT(kept, 0.0);
    for (size_t i = 0; i < qf.size(); ++i) {
      const double want = is_kept(i) ? qf[i] / kept : 0.0;
      // The two heads' logits are sums over rows tiled differently (200 rows against the full
      // vocabulary): equal to float rounding, a few parts in a thousand after the softmax.
      ASSERT_NEAR(qr[i], want, 1e-6 + 1e-2 * want) << "prompt " << s << ", id " << i;
    }
    ++compared;
  }
  EXPECT_GE(compared, 3);
}

// An EAGLE-3 head built to agree with its target: the target's layers add nothing (attention and
// FFN outputs zero), so its next token is a function of the current token alone; the draft's
// attention reads only its own row (q = k = 4 x the normed embedding half, V and O identities on
// it), its residual is dropped (norm_before_residual with a zero hidden_norm, fc zero) and its
// FFN adds nothing, so each draft row's hidden state is the RMS-normed embedding of the token it
// was fed, read out through the target's own norm and head.
struct AgreeingPair {
  std::string target, draft;  // GGUF paths
};

AgreeingPair make_agreeing_pair(const std::string& tag) {
  const std::string dir = ::testing::TempDir() + "/fulgur_eagle3_" + tag;
  const GgufReader tr(target_path());
  const int64_t E = target().n_embd();
  testing_support::GgufEdit target_edit;
  for (int64_t l = 0; l < target().n_layer(); ++l) {
    for (const char* t : {"attn_output.weight", "ffn_down.weight"}) {
      const std::string name = "blk." + std::to_string(l) + "." + t;
      testing_support::F32Tensor z = testing_support::read_f32(tr, name);
      std::fill(z.data.begin(), z.data.end(), 0.0f);
      target_edit.tensors[name] = std::move(z);
    }
  }
  // The head reads token x + 7's embedding row for token x's logit (ids mod the vocabulary): the
  // next token follows the current one around a long cycle, never a fixed point, so a chain that
  // feeds the wrong token drafts the wrong one (with the embedding's own rows, x -> x would make
  // every draft the anchor again).
  testing_support::F32Tensor head = testing_support::read_f32(tr, "token_embd.weight");
  const testing_support::F32Tensor embd = head;
  const size_t V = head.data.size() / static_cast<size_t>(E);
  for (size_t v = 0; v < V; ++v) {
    std::copy_n(embd.data.begin() + static_cast<std::ptrdiff_t>(((v + 7) % V) * static_cast<size_t>(E)), E,
                head.data.begin() + static_cast<std::ptrdiff_t>(v * static_cast<size_t>(E)));
  }
  target_edit.tensors["output.weight"] = std::move(head);
  const std::string target_file = testing_support::write_edited_gguf(target_path(), dir + "_target.gguf", target_edit);
  const Model m(target_file);

  DraftSynthOptions o = eagle3_options("speculators", 0, m);
  o.head_dim = 32;
  o.n_head = o.n_head_kv = E / o.head_dim;
  o.norm_before_residual = true;
  const std::string draft = make_eagle3(tag + "_random", o, target_file);
  const GgufReader dr(draft);
  testing_support::GgufEdit edit;
  const auto fill = [&](const std::string& name, const auto& value) {  // value(row, column)
    testing_support::F32Tensor t = testing_support::read_f32(dr, name);
    const int64_t cols = t.shape[0];
    for (size_t i = 0; i < t.data.size(); ++i) {
      t.data[i] = value(static_cast<int64_t>(i) / cols, static_cast<int64_t>(i) % cols);
    }
    edit.tensors[name] = std::move(t);
  };
  const auto identity = [](float s) { return [s](int64_t r, int64_t c) { return r == c ? s : 0.0f; }; };
  const auto constant = [](float s) { return [s](int64_t, int64_t) { return s; }; };
  fill("fc.weight", constant(0.0f));
  fill("blk.0.attn_norm.weight", constant(1.0f));
  fill("blk.0.attn_norm_2.weight", constant(0.0f));
  fill("blk.0.attn_q.weight", identity(4.0f));  // columns [0, E) of [embedding ; hidden] are the embedding
  fill("blk.0.attn_k.weight", identity(4.0f));
  fill("blk.0.attn_v.weight", identity(1.0f));
  fill("blk.0.attn_output.weight", identity(1.0f));
  fill("blk.0.ffn_down.weight", constant(0.0f));
  edit.tensors["output_norm.weight"] = testing_support::read_f32(tr, "output_norm.weight");
  edit.tensors["output.weight"] = target_edit.tensors.at("output.weight");
  if (dr.find_tensor("token_embd.weight")) edit.tensors["token_embd.weight"] = testing_support::read_f32(tr, "token_embd.weight");
  return {target_file, testing_support::write_edited_gguf(draft, dir + "_draft.gguf", edit)};
}

// Greedy drafts of the agreeing head are the target's tokens wherever the chain fed the right
// token at the right place: (almost) every draft is accepted at every position of chains up to 4
// long, as Mtp.AgreeingHeadIsAccepted asserts for MTP. A chain that feeds a draft token one step
// late, or a KV row left from a rejected draft at a position the head attends to, shows up as
// lost acceptance.
TEST(Eagle3, AgreeingHeadIsAccepted) {
  const AgreeingPair pair = make_agreeing_pair("agree");
  const Model m(pair.target);
  const SamplerParams sp = greedy_sampling();
  const auto want = plain_outputs(sp, m);
  for (const auto& out : want) EXPECT_GE(std::set<int32_t>(out.begin(), out.end()).size(), out.size() / 2);
  for (int n_max : {1, 4}) {
    auto d = load(pair.draft, n_max, m);
    GenerationStats st;
    EXPECT_EQ(spec_generate(m, sp, {d.get()}, test_prompts(), kNPredict, &st, {.schedule = SpecSchedule::kFixed}), want);
    const DrafterStats& s = st.drafters.at(0);
    std::printf("[agreeing EAGLE-3 head, n_max %d] %lld of %lld drafts accepted, %.2f tokens per step\n", n_max,
                static_cast<long long>(s.accepted), static_cast<long long>(s.drafted), s.mean_accepted_length());
    ASSERT_EQ(s.accepted_at.size(), static_cast<size_t>(n_max));
    for (int i = 0; i < n_max; ++i) EXPECT_GE(s.accepted_at[i], s.drafted_at[i] * 95 / 100) << "position " << i;
    EXPECT_GT(s.mean_accepted_length(), 0.9 * (n_max + 1));
  }
}

// Under a grammar (the server's response_format / tool_choice) the generator cuts an EAGLE-3
// chain at the first token the grammar rejects and verifies the rest against the masked target,
// so greedy output is the plain constrained output:
//  * a random draft under a bracketed list grammar: its own chains (all cut by the grammar, the
//    drafter rolled back after each), and its chains replaced by the constrained continuation
//    corrupted at a cycling position (accepted, and the wrong token cut or rejected);
//  * the agreeing head under a grammar that forbids the letters a-m: its own chains, accepted
//    until the next token of the head's cycle is one the grammar forbids, cut there, and the
//    masked target's token drafted from on.
// A verifier that left drafted steps unmasked would emit the unmasked argmax at a cut or a
// rejection: a token the grammar forbids.
TEST(Eagle3, GreedyUnderAGrammarIsTheSame) {
  const auto list = std::make_shared<Grammar>(parse_gbnf(R"(root ::= "[" item ("," item)* "]"
item ::= [a-f]+ | "true" | "null")"));
  const Constrained plain = generate_constrained(target(), nullptr, list);
  const Tokenizer tok(read_vocab(target().gguf()));
  for (const auto& out : plain.out) {
    const std::string text = tok.decode(out, false);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text[0], '[') << text;
  }
  auto random = load(make_eagle3("grammar", eagle3_options("speculators")), 3);
  const Constrained own = generate_constrained(target(), random.get(), list);
  print_counts("EAGLE-3 under a grammar, random draft", own);
  EXPECT_EQ(own.out, plain.out) << "the random draft's own chains";
  EXPECT_GT(own.cut, 0) << "the random draft's chains are cut by the grammar";

  ControlledDrafter controlled(*random, static_cast<int>(target().n_vocab()), {.corrupt = true});
  const auto prompts = test_prompts();
  for (size_t i = 0; i < prompts.size(); ++i) {
    controlled.set_reference(static_cast<int>(i), plain.out[i], static_cast<int32_t>(prompts[i].size()));
  }
  const Constrained replayed = generate_constrained(target(), &controlled, list);
  print_counts("EAGLE-3 under a grammar, replayed with wrong tokens", replayed);
  EXPECT_EQ(replayed.out, plain.out) << "the constrained continuation replayed with wrong tokens";
  EXPECT_GT(replayed.accepted, 0) << "the constrained continuation is accepted";
  EXPECT_GT(replayed.cut, 0) << "wrong tokens are cut by the grammar";

  const AgreeingPair pair = make_agreeing_pair("agree_grammar");
  const Model m(pair.target);
  const auto no_a_to_m = std::make_shared<Grammar>(parse_gbnf("root ::= [^a-m]*"));
  const Constrained want = generate_constrained(m, nullptr, no_a_to_m);
  auto agreeing = load(pair.draft, 3, m);
  const Constrained got = generate_constrained(m, agreeing.get(), no_a_to_m);
  print_counts("EAGLE-3 under a grammar, agreeing head", got);
  EXPECT_EQ(got.out, want.out) << "the agreeing head's own chains";
  EXPECT_GT(got.accepted, 0) << "the head's chains are accepted";
  EXPECT_GT(got.cut, 0) << "and cut by the grammar";
}

// Sampled drafting with the draft's real q: every emitted token has the target's distribution.
// A random draft agrees with the target only where both are flat, hence temperature 6; with the
// reduced vocabulary (q zero outside the 200 ids d2t names) one draft per step at temperature 3,
// accepted less often, where the check still tells a wrong correction from a right one.
struct SampledCase {
  int64_t draft_vocab;
  int n_drafts;
  float temperature;
};
class Eagle3Sampled : public ::testing::TestWithParam<SampledCase> {};

TEST_P(Eagle3Sampled, OutputHasTheTargetsDistribution) {
  const auto [draft_vocab, n_drafts, temperature] = GetParam();
  const std::string path = make_eagle3("sampled_" + std::to_string(draft_vocab), eagle3_options("speculators", draft_vocab));
  const Model& m = target();
  SamplerParams sp;
  sp.temperature = temperature;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  auto d = load(path, n_drafts);
  const auto runs = testing_support::sampled_rounds(m, sp, *d);
  testing_support::expect_emissions_lossless(m, sp, runs, static_cast<size_t>(n_drafts), 200,
                                             {testing_support::Simulated::kArgmaxBonus,
                                              testing_support::Simulated::kResampleP});
}

INSTANTIATE_TEST_SUITE_P(Vocab, Eagle3Sampled,
                         ::testing::Values(SampledCase{0, 3, 6.0f}, SampledCase{200, 1, 3.0f}),
                         [](const auto& info) { return info.param.draft_vocab ? std::string("reduced") : std::string("full"); });

TEST(Eagle3, BadInputIsRefusedByName) {
  const std::string good = make_eagle3("bad_base", eagle3_options("speculators"));
  // Loaded without its target.
  try {
    Model alone(good);
    ADD_FAILURE() << "an eagle3 file loaded without a target";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("load it as a draft"), std::string::npos) << e.what();
  }
  // A target without the tapped layer.
  DraftSynthOptions deep = eagle3_options("speculators");
  deep.target_layer_ids = {1, 2, 40};
  try {
    make_eagle3("bad_layer", deep);
    ADD_FAILURE() << "a tap past the target's layers converted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tapped layer 40"), std::string::npos) << e.what();
  }
  // Two taps.
  DraftSynthOptions two = eagle3_options("specforge");
  two.target_layer_ids = {1, 2};
  EXPECT_THROW(synth_eagle3_checkpoint(two), Error);
  // A plain model where an EAGLE-3 draft is expected.
  try {
    load(target_path(), 3);
    ADD_FAILURE() << "a qwen3 model loaded as an EAGLE-3 draft";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an EAGLE-3 draft"), std::string::npos) << e.what();
  }
  // A norm llama.cpp's eagle3 does not have.
  DraftSynthOptions o = eagle3_options("speculators");
  o.out_dir = ::testing::TempDir() + "/fulgur_eagle3_bad_norm";
  synth_eagle3_checkpoint(o);
  {
    HfConfig cfg = HfConfig::load(o.out_dir);
    nlohmann::json j = cfg.json();
    j["norm_before_fc"] = true;
    write_json_file(o.out_dir + "/config.json", j);
  }
  ConvertOptions c{.in_dir = o.out_dir, .out_path = o.out_dir + ".gguf", .type = DType::kF32, .progress = false,
                   .threads = 1, .target = target_path()};
  try {
    convert_hf_to_gguf(c);
    ADD_FAILURE() << "norm_before_fc converted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("norm_before_fc is true"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(c.out_path));
}

}  // namespace
}  // namespace fulgur
