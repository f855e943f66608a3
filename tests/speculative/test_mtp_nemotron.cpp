// The MTP drafter on Nemotron-H targets (nemotron_h, nemotron_h_moe with `synth --mtp`), whose
// block pairs with the normed hidden state (the target's output_norm row; in a chain, the
// block's own final_layernorm row):
//  * greedy output identical with and without draft-mtp (the shared MtpTargets suite in
//    test_mtp.cpp runs these archs too: random heads, the target's continuation corrupted at a
//    cycling position, behind the n-gram drafter, state equal to a fresh drafter's);
//  * the drafts are those of the block run by hand on the normed rows (target output_norm, then
//    the block's own final norm in the chain);
//  * a head constructed to agree with the target is accepted (almost) always;
//  * sampled output has the target's distribution (every emitted token checked);
//  * a rejected draft leaves the target's Mamba2 state (restored from its snapshot planes) as if
//    the draft had never been decoded, bit for bit;
//  * the drafter asks the target for the final norm's tap and refuses a file without a block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "controlled_drafters.h"
#include "core/error.h"
#include "emission_check.h"
#include "gguf_edit.h"
#include "model/context.h"
#include "spec_fixture.h"
#include "speculative/drafters/mtp.h"
#include "speculative/target_features.h"

namespace fulgur {
namespace {

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

std::vector<std::vector<int32_t>> plain_outputs(const Model& m, const SamplerParams& sp) {
  std::vector<std::vector<int32_t>> out;
  const auto prompts = test_prompts();
  for (size_t i = 0; i < kNPredict.size(); ++i) out.push_back(plain_generate(m, prompts[i], kNPredict[i], sp, sp.seed + i));
  return out;
}

class NemotronMtp : public ::testing::TestWithParam<std::string> {};

// A copy of the tiny Nemotron-H + MTP file whose MTP block computes the trunk's final residual
// x, up to rounding, and whose logits then have the target's argmax. The trunk becomes a bigram
// model: every sublayer's output projection zeroed except layer 1's feed-forward (MoE or MLP),
// the embedding rows scaled to root mean square kRms and untied from the head, so
// x = e + FFN1(norm(e)), a random function of the token. The block reads c·RMSNorm(e) = e
// (c = sqrt(kRms² + eps)) through eh_proj = [c·I | 0] (the hidden half ignored), zeroes its
// attention and runs layer 1's feed-forward. Its final norm is a LayerNorm where the target's
// is an RMSNorm: the two differ by removing mean(x) and by the scale, so the output head's
// rows are made zero-mean (the head ignores a constant row) and both gains uniform (6 for the
// target, 6·alpha for the block): the block's logits are the target's times a positive factor
// (alpha · rms(x) / std(x)), the same argmax, about alpha times the temperature.
std::string agreeing_head(const std::string& arch, float alpha) {
  const std::string src = tiny_model(arch, DType::kF32, 1, true);
  const GgufReader r(src);
  const int64_t E = 256;
  const float eps = r.get_f32(arch + ".attention.layer_norm_epsilon");
  const bool moe = arch == "nemotron_h_moe";
  testing_support::GgufEdit edit;
  const auto zero = [&](const std::string& name) {
    F32Tensor t = testing_support::read_f32(r, name);
    std::fill(t.data.begin(), t.data.end(), 0.0f);
    edit.tensors[name] = std::move(t);
  };
  const auto copy = [&](const std::string& from, const std::string& to) {
    edit.tensors[to] = testing_support::read_f32(r, from);
  };
  const auto uniform = [&](const std::string& name, float v) {
    edit.tensors[name] = {{E}, std::vector<float>(static_cast<size_t>(E), v)};
  };
  constexpr float kRms = 0.05f;
  F32Tensor embd = testing_support::read_f32(r, "token_embd.weight");
  F32Tensor head = testing_support::read_f32(r, "output.weight");
  for (size_t v = 0; v < embd.data.size() / E; ++v) {
    float* row = embd.data.data() + v * E;
    double ms = 0;
    for (int64_t c = 0; c < E; ++c) ms += static_cast<double>(row[c]) * row[c];
    const float s = static_cast<float>(kRms / std::sqrt(ms / E));
    for (int64_t c = 0; c < E; ++c) row[c] *= s;
    float* out = head.data.data() + v * E;
    double mean = 0;
    for (int64_t c = 0; c < E; ++c) mean += out[c];
    for (int64_t c = 0; c < E; ++c) out[c] -= static_cast<float>(mean / E);
  }
  edit.tensors["token_embd.weight"] = std::move(embd);
  edit.tensors["output.weight"] = std::move(head);
  uniform("output_norm.weight", 6.0f);
  uniform("blk.6.nextn.shared_head_norm.weight", 6.0f * alpha);
  // Pattern M-M*-M (nemotron_h) / MEM*EM (nemotron_h_moe): keep layer 1's feed-forward.
  const std::string ffn_out = moe ? "ffn_down_exps.weight" : "ffn_down.weight";
  for (const std::string& name : std::vector<std::string>{"blk.0.ssm_out.weight", "blk.2.ssm_out.weight", "blk.3.attn_output.weight",
                                 "blk.4." + ffn_out, "blk.5.ssm_out.weight", "blk.6.attn_output.weight"}) {
    zero(name);
  }
  if (moe) zero("blk.4.ffn_down_shexp.weight");
  const std::vector<std::string> ffn = moe ? std::vector<std::string>{"ffn_gate_inp.weight", "exp_probs_b.bias",
                                                                      "ffn_up_exps.weight", "ffn_down_exps.weight",
                                                                      "ffn_up_shexp.weight", "ffn_down_shexp.weight"}
                                           : std::vector<std::string>{"ffn_up.weight", "ffn_down.weight"};
  for (const std::string& t : ffn) copy("blk.1." + t, "blk.6." + t);
  copy("blk.1.attn_norm.weight", "blk.6.post_attention_norm.weight");
  F32Tensor eh{{2 * E, E}, std::vector<float>(static_cast<size_t>(2 * E * E), 0.0f)};
  for (int64_t o = 0; o < E; ++o) eh.data[static_cast<size_t>(o * 2 * E + o)] = std::sqrt(kRms * kRms + eps);
  edit.tensors["blk.6.nextn.eh_proj.weight"] = std::move(eh);
  uniform("blk.6.nextn.enorm.weight", 1.0f);
  return testing_support::write_edited_gguf(
      src, ::testing::TempDir() + "/fulgur_nemotron_mtp_agreeing_" + arch + std::to_string(alpha) + ".gguf", edit);
}

// The constructed head agrees with the target: (almost) every greedy draft is accepted, at
// every position of chains up to 4 long, and the output is the target's.
TEST_P(NemotronMtp, AgreeingHeadIsAccepted) {
  Model m(agreeing_head(GetParam(), 1.0f));
  const SamplerParams sp = greedy_sampling();
  const auto want = plain_outputs(m, sp);
  for (int n_max : {1, 4}) {
    auto mtp = make_mtp(m, n_max);
    GenerationStats st;
    EXPECT_EQ(spec_generate(m, sp, {mtp.get()}, test_prompts(), kNPredict, &st, {.schedule = SpecSchedule::kFixed}), want);
    const DrafterStats& s = st.drafters.at(0);
    std::printf("[%s agreeing head, n_max %d] %lld of %lld drafts accepted, %.2f tokens per step\n",
                GetParam().c_str(), n_max, static_cast<long long>(s.accepted), static_cast<long long>(s.drafted),
                s.mean_accepted_length());
    ASSERT_EQ(s.accepted_at.size(), static_cast<size_t>(n_max));
    for (int i = 0; i < n_max; ++i) EXPECT_GE(s.accepted_at[i], s.drafted_at[i] * 95 / 100) << "position " << i;
    EXPECT_GT(s.mean_accepted_length(), 0.9 * (n_max + 1));
  }
}

// Sampled drafting with the head's real q (the target at about twice the temperature): every
// emitted token has the target's distribution (emission_check.h).
TEST_P(NemotronMtp, SampledOutputHasTheTargetsDistribution) {
  Model m(agreeing_head(GetParam(), 0.5f));
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
  const DrafterStats& s = st.drafters.at(0);
  std::printf("[%s sampled] %lld of %lld drafts accepted\n", GetParam().c_str(), static_cast<long long>(s.accepted),
              static_cast<long long>(s.drafted));
  testing_support::expect_acceptance_between(s, kDrafts, 0.2, 0.95);
}

// Logits of one row, compared bit for bit.
bool same(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Verification by hand, as the generator does it, with the random head's drafts (mostly
// rejected): after each step seq_rm drops the rejected rows, which restores the Mamba2 layers'
// conv and SSM states from the snapshot planes of the verification decode. The next step's
// logits are then bitwise those of a context that decoded the accepted tokens one at a time
// and never saw a draft.
TEST_P(NemotronMtp, RejectedDraftsLeaveTheRecurrentStateAsIfNeverDrafted) {
  const Model m(tiny_model(GetParam(), DType::kF32, 1, true));
  constexpr int kNMax = 3;
  auto mtp = make_mtp(m, kNMax);
  EXPECT_EQ(mtp->required_taps(), std::vector<int>{final_norm_tap(m.n_layer())});
  Context ctx(m, {.n_ctx = 128, .n_batch = 16, .n_threads = 1, .n_rollback = 1 + kNMax});
  Context plain(m, {.n_ctx = 128, .n_batch = 16, .n_threads = 1});
  std::vector<int32_t> history = test_prompts()[0];
  ctx.set_taps(mtp->required_taps());
  FeatureGather features(ctx, mtp->required_taps());
  Batch b;
  std::vector<int64_t> rows;
  for (size_t i = 0; i < history.size(); ++i) {
    b.add(history[i], static_cast<int32_t>(i), 0, i + 1 == history.size());
    rows.push_back(static_cast<int64_t>(i));
  }
  ctx.decode(b);
  plain.decode(b);
  mtp->commit(0, history, 0, features.gather(rows));
  const int64_t V = m.n_vocab();
  int32_t anchor = static_cast<int32_t>(std::max_element(ctx.logits(b.size() - 1), ctx.logits(b.size() - 1) + V) -
                                        ctx.logits(b.size() - 1));
  const SamplerParams sp = greedy_sampling();
  int rejected = 0;
  for (int step = 0; step < 12; ++step) {
    const int32_t pos = static_cast<int32_t>(history.size());
    DraftRequest req;
    req.anchor = anchor;
    req.anchor_pos = pos;
    req.n_max = kNMax;
    req.sampling = &sp;
    Draft d;
    mtp->draft(req, d);
    ASSERT_EQ(d.tokens.size(), static_cast<size_t>(kNMax));
    // Verify [anchor, d1..dk]; its first row must be what a context that never saw a draft
    // computes for the anchor.
    b.clear();
    b.add(anchor, pos, 0, true);
    for (size_t i = 0; i < d.tokens.size(); ++i) b.add(d.tokens[i], pos + 1 + static_cast<int32_t>(i), 0, true);
    ctx.decode(b);
    Batch one;
    one.add(anchor, pos, 0, true);
    plain.decode(one);
    ASSERT_TRUE(same(ctx.logits(0), plain.logits(0), V)) << "step " << step << " (after " << rejected << " rollbacks)";
    // Accept while the target's argmax is the next draft.
    std::vector<int32_t> accepted = {anchor};
    int32_t next = -1;
    for (int64_t r = 0; r < b.size(); ++r) {
      next = static_cast<int32_t>(std::max_element(ctx.logits(r), ctx.logits(r) + V) - ctx.logits(r));
      if (r + 1 == b.size() || next != d.tokens[static_cast<size_t>(r)]) break;
      accepted.push_back(next);
    }
    const int32_t keep = pos + static_cast<int32_t>(accepted.size());
    if (keep < pos + b.size()) {
      ++rejected;
      ASSERT_TRUE(ctx.seq_rm(0, keep, -1)) << "step " << step;
    }
    std::vector<int64_t> kept_rows(accepted.size());
    for (size_t i = 0; i < kept_rows.size(); ++i) kept_rows[i] = static_cast<int64_t>(i);
    mtp->commit(0, accepted, pos, features.gather(kept_rows));
    for (size_t i = 1; i < accepted.size(); ++i) {  // the anchor is in `plain` already
      Batch row;
      row.add(accepted[i], pos + static_cast<int32_t>(i), 0, true);
      plain.decode(row);
    }
    history.insert(history.end(), accepted.begin(), accepted.end());
    anchor = next;
  }
  EXPECT_GE(rejected, 6) << "the random head's drafts should mostly be rejected";
}

// Index of the largest of n logits.
int32_t argmax(const float* logits, int64_t n) { return static_cast<int32_t>(std::max_element(logits, logits + n) - logits); }

// The drafter's chain against the block run by hand as llama.cpp pairs it for Nemotron-H: row q
// holds (token q, the target's output_norm row of q - 1; zeros at q = 0), and the chain row
// holds (d1, the block's own final-norm row of the seed). Random weights make the drafts depend
// on exactly which rows are paired.
TEST_P(NemotronMtp, DraftsPairTheNormedHiddenRows) {
  const Model m(tiny_model(GetParam(), DType::kF32, 1, true));
  const Model block(m.path(), {.base = &m, .nextn = true});
  const std::vector<int32_t> history = test_prompts()[1];
  const int64_t V = m.n_vocab(), E = m.n_embd();
  const SamplerParams sp = greedy_sampling();
  for (int32_t n = 3; n < static_cast<int32_t>(history.size()); n += 2) {
    auto mtp = make_mtp(m, 2);
    Context target(m, {.n_ctx = 128, .n_batch = 64, .n_threads = 1});
    testing_support::commit_history(*mtp, target, 0, history, n);
    DraftRequest req;
    req.anchor = history[static_cast<size_t>(n)];
    req.anchor_pos = n;
    req.n_max = 2;
    req.sampling = &sp;
    Draft d;
    mtp->draft(req, d);

    // The target's output_norm rows, from a context of our own (not the drafter's taps).
    Context normed(m, {.n_ctx = 128, .n_batch = 64, .n_threads = 1});
    normed.set_taps({final_norm_tap(m.n_layer())});
    Batch t;
    for (int32_t q = 0; q < n; ++q) t.add(history[static_cast<size_t>(q)], q, 0, false);
    normed.decode(t);
    Context hand(block, {.n_ctx = 128, .n_batch = 64, .n_threads = 1});
    Batch b;
    const std::vector<float> zeros(static_cast<size_t>(E), 0.0f);
    for (int32_t q = 0; q <= n; ++q) {
      b.add(history[static_cast<size_t>(q)], q, 0, q == n);
      const float* h = q == 0 ? zeros.data() : normed.tap(0, q - 1);
      b.aux.insert(b.aux.end(), h, h + E);
    }
    hand.decode(b);
    const int32_t d1 = argmax(hand.logits(n), V);
    Batch chain;
    chain.add(d1, n + 1, 0, true);
    chain.aux.insert(chain.aux.end(), hand.hidden(n), hand.hidden(n) + E);
    hand.decode(chain);
    EXPECT_EQ(d.tokens, (std::vector<int32_t>{d1, argmax(hand.logits(0), V)})) << "anchor at " << n;
  }
}

// A nemotron file without an MTP block cannot give draft-mtp; the error names the file and the
// key and says how to get one.
TEST_P(NemotronMtp, FileWithoutBlockIsRefused) {
  Model plain(tiny_model(GetParam()));
  try {
    make_mtp(plain, 3);
    FAIL() << "a model without an MTP block";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("has no MTP block"), std::string::npos) << what;
    EXPECT_NE(what.find(GetParam() + ".nextn_predict_layers"), std::string::npos) << what;
    EXPECT_NE(what.find("fulgur convert --mtp"), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, NemotronMtp, ::testing::Values("nemotron_h", "nemotron_h_moe"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fulgur
