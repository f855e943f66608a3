// The gated delta rule (kernels/recurrent.h): hand-computed values and the delta rule's
// defining property on the per-token ref, the chunked ref against the per-token ref (the
// validation of the WY derivation), every runnable ISA against both refs over odd shapes,
// decays near 0 and near 1 and both head maps, and the determinism contracts (per-token:
// n tokens == n calls of one, snapshots == stopped runs, the pool changes nothing; chunked:
// pieces cut at multiples of 64 == one piece).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/recurrent.h"
#include "ops_test_util.h"

namespace fulgur::kernels {
namespace {

using testing::expect_bitwise;
using testing::expect_close_rms;
using testing::expect_per_token_contract;
using testing::IsaGuard;
using testing::random_floats;
using testing::runnable_isas;

struct GdnCase {
  int64_t n, hk, hv, dk, dv;
  GdnHeadMap map;
  float g_lo, g_hi;  // log decay range: near 0 = decay near 1, very negative = decay near 0
  int64_t pos0 = 0;
};

std::string describe(Isa isa, const GdnCase& c) {
  return std::string(isa_name(isa)) + " n=" + std::to_string(c.n) + " Hk=" + std::to_string(c.hk) +
         " Hv=" + std::to_string(c.hv) + " Dk=" + std::to_string(c.dk) +
         " Dv=" + std::to_string(c.dv) + (c.map == GdnHeadMap::kTiled ? " tiled" : " grouped") +
         " g=[" + std::to_string(c.g_lo) + "," + std::to_string(c.g_hi) +
         "] pos0=" + std::to_string(c.pos0);
}

// q and k rows share one buffer like the conv output [q | k | v] of a GDN layer.
struct GdnProblem {
  GdnCase c;
  int64_t row, gs, os;  // strides of the qkv rows, of g/beta, of out
  std::vector<float> qkv, g, beta, state;

  GdnProblem(const GdnCase& gc, std::mt19937& rng)
      : c(gc), row(2 * gc.hk * gc.dk + gc.hv * gc.dv + 5), gs(gc.hv + 2), os(gc.hv * gc.dv + 3) {
    qkv = random_floats(rng, c.n * row, -1, 1);
    for (int64_t t = 0; t < c.n; ++t) {  // l2-normalise every q and k head
      for (int64_t h = 0; h < 2 * c.hk; ++h) {
        float* x = qkv.data() + t * row + h * c.dk;
        double ss = 0;
        for (int64_t i = 0; i < c.dk; ++i) ss += static_cast<double>(x[i]) * x[i];
        for (int64_t i = 0; i < c.dk; ++i) x[i] = static_cast<float>(x[i] / std::sqrt(ss));
      }
    }
    g = random_floats(rng, c.n * gs, c.g_lo, c.g_hi);
    beta = random_floats(rng, c.n * gs, 0.02f, 0.98f);
    state = random_floats(rng, c.hv * c.dv * c.dk, -1, 1);
  }
  GatedDeltaArgs args(int64_t t0, int64_t n, float* st, float* out, float* const* snap) const {
    GatedDeltaArgs a;
    a.n = n;
    a.n_k_heads = c.hk;
    a.n_v_heads = c.hv;
    a.k_dim = c.dk;
    a.v_dim = c.dv;
    a.head_map = c.map;
    a.q = qkv.data() + t0 * row;
    a.k = a.q + c.hk * c.dk;
    a.v = a.k + c.hk * c.dk;
    a.q_stride = a.k_stride = a.v_stride = row;
    a.g = g.data() + t0 * gs;
    a.beta = beta.data() + t0 * gs;
    a.g_stride = a.beta_stride = gs;
    a.state = st;
    a.out = out + t0 * os;
    a.out_stride = os;
    a.snap = snap;
    a.pos0 = c.pos0 + t0;
    return a;
  }
};

TEST(RecurrentRef, DeltaKnownValues) {
  // Dk = Dv = 1, S = 2: decay e^g = 1/2 -> 1; m = 1·k = 0.5 (k = 0.5);
  // δ = β(v − m) = 0.5·(3 − 0.5) = 1.25; S = 1 + 0.5·1.25 = 1.625; out = S·q·scale.
  const float q = 2, k = 0.5f, v = 3, g = std::log(0.5f), beta = 0.5f;
  float state = 2, out = 0;
  GatedDeltaArgs a;
  a.n = 1;
  a.n_k_heads = a.n_v_heads = a.k_dim = a.v_dim = 1;
  a.q_scale = 0.25f;
  a.q = &q;
  a.k = &k;
  a.v = &v;
  a.g = &g;
  a.beta = &beta;
  a.state = &state;
  a.out = &out;
  a.q_stride = a.k_stride = a.v_stride = a.g_stride = a.beta_stride = a.out_stride = 1;
  gated_delta_ref(a);
  EXPECT_NEAR(state, 1.625, 1e-6);
  EXPECT_NEAR(out, 1.625 * 2 * 0.25, 1e-6);
}

TEST(RecurrentRef, DeltaRuleStoresWhatItIsGiven) {
  // With no decay and β = 1, writing (k, v) and then reading with q = k (scale 1) returns v
  // exactly, whatever the state held: S'ᵀk = Sᵀk + (v − Sᵀk)·(k·k) with |k| = 1.
  std::mt19937 rng(31);
  const GdnCase c{1, 2, 4, 9, 5, GdnHeadMap::kGrouped, 0, 0};
  GdnProblem p(c, rng);
  for (float& b : p.beta) b = 1.0f;
  for (int64_t h = 0; h < c.hk; ++h)  // q := k
    for (int64_t i = 0; i < c.dk; ++i) p.qkv[h * c.dk + i] = p.qkv[(c.hk + h) * c.dk + i];
  std::vector<float> out(p.os), st = p.state;
  GatedDeltaArgs a = p.args(0, 1, st.data(), out.data(), nullptr);
  a.q_scale = 1.0f;
  gated_delta_ref(a);
  for (int64_t hv = 0; hv < c.hv; ++hv) {
    for (int64_t j = 0; j < c.dv; ++j)
      EXPECT_NEAR(out[hv * c.dv + j], a.v[hv * c.dv + j], 1e-5) << "hv " << hv << " j " << j;
  }
}

const GdnCase kCases[] = {
    {1, 1, 1, 1, 1, GdnHeadMap::kTiled, -1, 0},
    {1, 2, 4, 7, 5, GdnHeadMap::kTiled, -1, 0},
    {9, 2, 4, 16, 16, GdnHeadMap::kGrouped, -0.5f, 0},
    {100, 3, 3, 33, 17, GdnHeadMap::kTiled, -2, 0, 5},
    {70, 1, 2, 64, 32, GdnHeadMap::kGrouped, -1e-3f, 0, 60},
    {130, 2, 4, 128, 128, GdnHeadMap::kTiled, -1e-3f, 0, 0},   // decay near 1
    {150, 2, 4, 128, 128, GdnHeadMap::kGrouped, -20, -4, 37},  // decay near 0
    {200, 2, 6, 128, 64, GdnHeadMap::kTiled, -4, 0, 64},
};

// Outputs and final state of one form over the whole run of a problem.
struct FormRun {
  std::vector<float> out, state;
};

template <class Form>
FormRun run_form(const GdnProblem& p, Form&& form) {
  FormRun r{std::vector<float>(p.c.n * p.os, 0.0f), p.state};
  form(p.args(0, p.c.n, r.state.data(), r.out.data(), nullptr));
  return r;
}

void expect_close_run(const FormRun& got, const FormRun& want, double rel,
                      const std::string& what) {
  expect_close_rms(got.out.data(), want.out.data(), want.out.size(), rel, what + " out");
  expect_close_rms(got.state.data(), want.state.data(), want.state.size(), rel, what + " state");
}

TEST(RecurrentRef, ChunkedRefMatchesPerTokenRef) {
  std::mt19937 rng(32);
  for (const GdnCase& c : kCases) {
    const GdnProblem p(c, rng);
    expect_close_run(run_form(p, gated_delta_chunked_ref), run_form(p, gated_delta_ref), 1e-5,
                     "chunked ref vs per-token ref " + describe(Isa::kRef, c));
  }
}

TEST(Recurrent, DeltaFormsMatchRefs) {
  std::mt19937 rng(33);
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    for (const GdnCase& c : kCases) {
      const GdnProblem p(c, rng);
      const std::string what = describe(isa, c);
      const FormRun tok_ref = run_form(p, gated_delta_ref),
                    chunk_ref = run_form(p, gated_delta_chunked_ref);
      const FormRun tok = run_form(p, [&](const GatedDeltaArgs& a) { gated_delta(a, &pool); });
      const FormRun chunk =
          run_form(p, [&](const GatedDeltaArgs& a) { gated_delta_chunked(a, &pool); });
      expect_close_run(tok, tok_ref, 2e-5, "per-token vs its ref " + what);
      expect_close_run(chunk, chunk_ref, 5e-5, "chunked vs its ref " + what);
      expect_close_run(chunk, tok_ref, 5e-5, "chunked vs per-token ref " + what);
    }
  }
}

TEST(Recurrent, DeltaTokenByTokenIsBitwiseTheBatch) {
  std::mt19937 rng(35);
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    // Aligned planes of whole vectors take the non-temporal path, the others plain stores.
    for (const auto& [c, misalign] :
         {std::pair{GdnCase{9, 2, 4, 128, 128, GdnHeadMap::kTiled, -1, 0}, 0},
          std::pair{GdnCase{9, 2, 4, 128, 128, GdnHeadMap::kTiled, -1, 0}, 3},
          std::pair{GdnCase{7, 3, 3, 33, 20, GdnHeadMap::kGrouped, -3, 0}, 0}}) {
      const GdnProblem p(c, rng);
      auto call = [&](int64_t t0, int64_t n, float* st, float* out, float* const* snap,
                      bool batch) {
        gated_delta(p.args(t0, n, st, out, snap), batch ? &pool : nullptr);
      };
      expect_per_token_contract(call, c.n, p.state, c.n * p.os, misalign, {4},
                                describe(isa, c) + " misalign=" + std::to_string(misalign));
    }
  }
}

TEST(Recurrent, ChunkedPiecesAtMultiplesOf64AreBitwiseOnePiece) {
  std::mt19937 rng(36);
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    // pos0 = 64: a prompt continued after a first piece; cuts at 128 and 256 absolute.
    const GdnCase c{230, 2, 4, 64, 48, GdnHeadMap::kTiled, -1, 0, 64};
    const GdnProblem p(c, rng);
    std::vector<float> o_one(c.n * p.os, 0), o_pieces(c.n * p.os, 0), st_one = p.state,
                                                                      st_pieces = p.state;
    gated_delta_chunked(p.args(0, c.n, st_one.data(), o_one.data(), nullptr), &pool);
    for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, 64}, {64, 192}, {192, 230}})
      gated_delta_chunked(p.args(t0, t1 - t0, st_pieces.data(), o_pieces.data(), nullptr));
    expect_bitwise(o_pieces.data(), o_one.data(), o_one.size(),
                   std::string("chunked pieces out ") + isa_name(isa));
    expect_bitwise(st_pieces.data(), st_one.data(), st_one.size(),
                   std::string("chunked pieces state ") + isa_name(isa));
  }
}

TEST(Recurrent, DeltaBadArgumentsThrow) {
  std::mt19937 rng(37);
  const GdnProblem p({2, 2, 4, 8, 8, GdnHeadMap::kTiled, -1, 0}, rng);
  std::vector<float> st = p.state, out(2 * p.os);
  GatedDeltaArgs a = p.args(0, 2, st.data(), out.data(), nullptr);
  a.n_v_heads = 5;
  EXPECT_THROW(gated_delta(a), Error);
  a = p.args(0, 2, st.data(), out.data(), nullptr);
  a.k_dim = kGdnMaxKeyDim + 1;
  EXPECT_THROW(gated_delta(a), Error);
  a = p.args(0, 2, st.data(), out.data(), nullptr);
  a.out_stride = 3;
  EXPECT_THROW(gated_delta(a), Error);
  a = p.args(0, 2, st.data(), out.data(), nullptr);
  a.pos0 = -1;
  EXPECT_THROW(gated_delta_chunked(a), Error);
  float* snap[2] = {nullptr, nullptr};
  a = p.args(0, 2, st.data(), out.data(), snap);
  EXPECT_THROW(gated_delta_chunked(a), Error);
}

}  // namespace
}  // namespace fulgur::kernels
