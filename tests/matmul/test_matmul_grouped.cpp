// matmul_grouped, the experts of a MoE layer as one op: against a separate matmul call per job on
// its gathered rows (bit for bit), against matmul_ref (within matmul's bounds), alone-vs-batched
// rows, for every weight type, both layouts, 1 and 2 threads and odd routings (one row, a row
// routed to every expert, experts without rows, uneven counts); expert slices of a stacked
// tensor (kernels/moe.h) and their packing; argument errors.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/moe.h"
#include "matmul/matmul_fixtures.h"

namespace fulgur::kernels {
namespace {

constexpr float kSentinel = -7.0f;

// A stack of n_expert matrices [rows][cols] (a GGUF expert tensor) and its expert matrices in
// one layout: row-major slices, slices of the packed stack (rows % 16 == 0), or each expert
// packed on its own.
struct Experts {
  Weights stack;  // [n_expert * rows][cols] row-major, with the dequantized copy
  int64_t n_expert = 0, rows = 0, cols = 0;
  std::shared_ptr<PackedWeight> packed_stack;
  std::vector<std::shared_ptr<PackedWeight>> packed_each;
  std::vector<WeightView> views;  // [n_expert] what the jobs use

  Experts(DType type, int64_t n_expert_, int64_t rows_, int64_t cols_, uint32_t seed, bool pack)
      : stack(make_weights(type, n_expert_ * rows_, cols_, seed)),
        n_expert(n_expert_), rows(rows_), cols(cols_) {
    if (pack && expert_stack_packable(rows)) packed_stack = std::make_shared<PackedWeight>(stack.view, nullptr);
    for (int64_t e = 0; e < n_expert; ++e) {
      if (packed_stack) {
        views.push_back(expert_matrix(packed_stack->view(), n_expert, e));
      } else if (pack) {
        packed_each.push_back(std::make_shared<PackedWeight>(expert_matrix(stack.view, n_expert, e), nullptr));
        views.push_back(packed_each.back()->view());
      } else {
        views.push_back(expert_matrix(stack.view, n_expert, e));
      }
    }
  }
  const float* deq_row(int64_t e, int64_t o) const { return stack.deq.data() + (e * rows + o) * cols; }
};

// k distinct experts per row for n rows, never expert n_expert - 1 (so one expert has no
// rows); row 0 takes experts 0 .. k-1, the others random.
std::vector<int32_t> route(int64_t n, int64_t k, int64_t n_expert, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int32_t> pool;
    for (int32_t e = 0; e + 1 < n_expert; ++e) pool.push_back(e);
    if (r > 0) std::shuffle(pool.begin(), pool.end(), rng);
    for (int64_t j = 0; j < k; ++j) ids[static_cast<size_t>(r * k + j)] = pool[static_cast<size_t>(j)];
  }
  return ids;
}

// x's rows `rows` (count n) copied into one [n][cols] buffer.
std::vector<float> gather(const float* x, int64_t ldx, const int32_t* rows, int64_t n, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(n * cols));
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * cols, x + rows[i] * ldx, static_cast<size_t>(cols) * 4);
  return out;
}

// One grouped call's jobs over two stacks (gate and up) or one (down), and their outputs.
struct Call {
  std::vector<MatmulJob> jobs;
  std::vector<std::vector<float>> y;  // per job [max(n, 1)][ldy], sentinel-filled
};

// The gathered jobs of both stacks for every expert (ExpertRows order), gate and up alternating.
Call gathered_call(const std::vector<const Experts*>& stacks, const ExpertRows& er, int64_t ldy) {
  Call c;
  for (int64_t e = 0; e < er.n_expert(); ++e)
    for (const Experts* s : stacks) {
      c.y.emplace_back(static_cast<size_t>(std::max<int64_t>(er.count(e), 1) * ldy), kSentinel);
      c.jobs.push_back({&s->views[static_cast<size_t>(e)], er.count(e), er.rows(e), nullptr, 0,
                        c.y.back().data(), ldy});
    }
  return c;
}

// Checks each job's output against its own matmul call (bitwise; the same layout) and against
// matmul_ref on the row-major slice (matmul's bounds); the padding and empty jobs untouched.
void check_call(const Call& c, const std::vector<const Experts*>& stacks, const float* x_shared,
                int64_t ldx_shared, bool exact, ThreadPool* pool, const std::string& what) {
  for (size_t k = 0; k < c.jobs.size(); ++k) {
    const MatmulJob& j = c.jobs[k];
    const Experts& s = *stacks[k % stacks.size()];
    const int64_t e = static_cast<int64_t>(k / stacks.size());
    const std::string at = what + " job " + std::to_string(k) + " (expert " + std::to_string(e) +
                           ", " + std::to_string(j.n) + " rows)";
    if (j.n == 0) {
      for (float v : c.y[k]) ASSERT_EQ(v, kSentinel) << at << ": an empty job wrote";
      continue;
    }
    std::vector<float> xg;  // [n][cols] a gathered job's rows
    if (j.rows != nullptr) xg = gather(x_shared, ldx_shared, j.rows, j.n, s.cols);
    const float* xs = j.rows != nullptr ? xg.data() : j.x;
    const int64_t ldxs = j.rows != nullptr ? s.cols : j.ldx;
    std::vector<float> alone(c.y[k].size(), kSentinel);
    matmul(*j.w, xs, j.n, ldxs, alone.data(), j.ldy, pool);
    ASSERT_EQ(0, std::memcmp(alone.data(), c.y[k].data(), alone.size() * 4)) << at << ": grouped != matmul";
    std::vector<float> ref(c.y[k].size());
    matmul_ref(expert_matrix(s.stack.view, s.n_expert, e), xs, j.n, ldxs, ref.data(), j.ldy, nullptr);
    for (int64_t i = 0; i < j.n; ++i)
      for (int64_t o = 0; o < s.rows; ++o) {
        const double err = std::fabs(static_cast<double>(c.y[k][static_cast<size_t>(i * j.ldy + o)]) -
                                     ref[static_cast<size_t>(i * j.ldy + o)]);
        const OutputNorms nm = output_norms(xs + i * ldxs, s.deq_row(e, o), s.cols, s.stack.view.scale);
        ASSERT_LE(err, error_bound(s.stack.view.type, exact, nm)) << at << " row " << i << " out " << o;
      }
  }
}

std::vector<int64_t> cols_for(DType type) {
  const int64_t bs = dtype_info(type).block_size;
  return bs == 1 ? std::vector<int64_t>{23, 64} : std::vector<int64_t>{bs, 3 * bs};
}

class GroupedTypes : public ::testing::TestWithParam<DType> {};

// Gate and up of every expert as one call over shared rows, then down over each expert's own
// rows: each job bit for bit its own matmul, within matmul's bounds of matmul_ref.
TEST_P(GroupedTypes, MatchesSeparateCallsAndReference) {
  const DType type = GetParam();
  const int64_t n_expert = 7;
  struct Routing {
    int64_t n, k;
  };
  const Routing routings[] = {{1, 1}, {1, 6}, {3, 2}, {9, 3}, {20, 6}};
  ThreadPool two(2);
  IsaGuard guard;
  uint32_t seed = 100 + static_cast<uint32_t>(type);
  for (int64_t cols : cols_for(type))
    for (int64_t rows : {16, 17, 3}) {
      for (Isa isa : fast_isas())
        for (bool pack : {false, true}) {
          if (pack && packed_rect(type, isa) == nullptr) continue;
          set_active_isa(isa);
          const Experts gate(type, n_expert, rows, cols, seed, pack), up(type, n_expert, rows, cols, seed + 1, pack);
          const Experts down(type, n_expert, rows, cols, seed + 2, pack);
          for (const Routing& rt : routings)
            for (bool exact : {false, true}) {
              if (exact && is_float_type(type)) continue;
              ++seed;
              const int64_t ldx = cols + 5;
              const std::vector<float> x = make_x(rt.n, cols, ldx, seed, exact);
              const std::vector<int32_t> ids = route(rt.n, rt.k, n_expert, seed);
              ExpertRows er;
              er.build(ids.data(), rt.n, rt.k, n_expert);
              ASSERT_EQ(0, er.count(n_expert - 1));
              // The down projection's own rows: [n * k][ldp], one block per expert.
              const int64_t ldp = down.cols + 2;
              const std::vector<float> xp = make_x(rt.n * rt.k, down.cols, ldp, seed + 7, exact);
              for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
                const std::string what = std::string(isa_name(isa)) + (pack ? "/packed " : " ") +
                                         std::string(dtype_name(type)) + " " + std::to_string(rows) + "x" +
                                         std::to_string(cols) + " n=" + std::to_string(rt.n) +
                                         " k=" + std::to_string(rt.k) + (exact ? " exact" : "") +
                                         (pool ? " 2 threads" : " 1 thread");
                const std::vector<const Experts*> gu = {&gate, &up};
                Call c = gathered_call(gu, er, rows + 3);
                matmul_grouped(c.jobs.data(), static_cast<int>(c.jobs.size()), x.data(), rt.n, ldx, pool);
                check_call(c, gu, x.data(), ldx, exact, pool, what);

                Call d;
                for (int64_t e = 0; e < n_expert; ++e) {
                  d.y.emplace_back(static_cast<size_t>(std::max<int64_t>(er.count(e), 1) * down.rows), kSentinel);
                  d.jobs.push_back({&down.views[static_cast<size_t>(e)], er.count(e), nullptr,
                                    xp.data() + er.offset(e) * ldp, ldp, d.y.back().data(), down.rows});
                }
                matmul_grouped(d.jobs.data(), static_cast<int>(d.jobs.size()), nullptr, 0, 0, pool);
                check_call(d, {&down}, nullptr, 0, exact, pool, what + " down");
              }
            }
        }
    }
}

// A row's outputs are the same bits alone (decode) as in any batch (verification), whichever
// experts the other rows pick.
TEST_P(GroupedTypes, RowAloneEqualsRowInBatch) {
  const DType type = GetParam();
  const int64_t n_expert = 5, n = 11, k = 3, rows = 32, cols = cols_for(type)[1];
  ThreadPool two(2);
  IsaGuard guard;
  for (Isa isa : fast_isas())
    for (bool pack : {false, true}) {
      if (pack && packed_rect(type, isa) == nullptr) continue;
      set_active_isa(isa);
      const Experts gate(type, n_expert, rows, cols, 5, pack);
      const std::vector<float> x = make_x(n, cols, cols, 6, false);
      const std::vector<int32_t> ids = route(n, k, n_expert, 7);
      ExpertRows er;
      er.build(ids.data(), n, k, n_expert);
      Call batch = gathered_call({&gate}, er, rows);
      matmul_grouped(batch.jobs.data(), static_cast<int>(batch.jobs.size()), x.data(), n, cols, &two);
      for (int64_t r = 0; r < n; ++r) {
        ExpertRows one;
        one.build(ids.data() + r * k, 1, k, n_expert);
        Call c = gathered_call({&gate}, one, rows);
        matmul_grouped(c.jobs.data(), static_cast<int>(c.jobs.size()), x.data() + r * cols, 1, cols, &two);
        for (int64_t j = 0; j < k; ++j) {
          const int32_t e = ids[static_cast<size_t>(r * k + j)];
          // Row r's place among expert e's batch rows.
          const int64_t i = er.slot(r, j) - er.offset(e);
          EXPECT_EQ(0, std::memcmp(c.y[static_cast<size_t>(e)].data(),
                                   batch.y[static_cast<size_t>(e)].data() + i * rows, rows * 4))
              << isa_name(isa) << (pack ? "/packed " : " ") << "row " << r << " expert " << e;
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GroupedTypes, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

// One call may mix types, layouts and both kinds of job (gathered and own rows), float and int8
// paths: the shared rows are quantized only for int8 gathered jobs, own rows only for int8 jobs.
TEST(MatmulGrouped, MixedTypesAndJobKindsInOneCall) {
  const int64_t cols = 512, n_x = 7;
  const Weights a = make_weights(DType::kQ4_K, 33, cols, 41), b = make_weights(DType::kF16, 20, cols, 42);
  const Weights c = make_weights(DType::kQ8_0, 16, cols, 43), d = make_weights(DType::kBF16, 5, cols, 44);
  const Weights e = make_weights(DType::kQ6_K, 48, cols, 45);
  const std::vector<float> x = make_x(n_x, cols, cols + 1, 46, false);
  const std::vector<float> own = make_x(9, cols, cols, 47, false);  // [9][cols] private rows
  const int32_t ra[] = {6, 0, 3}, rb[] = {1, 1, 5, 2}, re[] = {4};
  ThreadPool two(2);
  IsaGuard guard;
  for (Isa isa : fast_isas())
    for (bool pack : {false, true}) {
      set_active_isa(isa);
      std::vector<std::shared_ptr<PackedWeight>> keep;
      auto view = [&](const Weights& w) {
        if (!pack || packed_rect(w.view.type, isa) == nullptr) return w.view;
        keep.push_back(std::make_shared<PackedWeight>(w.view, nullptr));
        return keep.back()->view();
      };
      const WeightView va = view(a), vb = view(b), vc = view(c), vd = view(d), ve = view(e);
      // Float-path jobs only (f16 gathered, bf16 own), then everything together.
      for (bool all : {false, true}) {
        std::vector<MatmulJob> jobs;
        std::vector<std::vector<float>> ys;
        auto add = [&](const WeightView& w, int64_t n, const int32_t* rows, const float* xo) {
          ys.emplace_back(static_cast<size_t>(n * (w.rows + 2)), kSentinel);
          jobs.push_back({&w, n, rows, xo, cols, ys.back().data(), w.rows + 2});
        };
        ys.reserve(5);
        if (all) add(va, 3, ra, nullptr);
        add(vb, 4, rb, nullptr);
        if (all) add(vc, 5, nullptr, own.data());
        add(vd, 4, nullptr, own.data() + 5 * cols);
        if (all) add(ve, 1, re, nullptr);
        matmul_grouped(jobs.data(), static_cast<int>(jobs.size()), x.data(), n_x, cols + 1, &two);
        for (size_t k = 0; k < jobs.size(); ++k) {
          const MatmulJob& j = jobs[k];
          std::vector<float> xg = j.rows != nullptr ? gather(x.data(), cols + 1, j.rows, j.n, cols)
                                                    : std::vector<float>(j.x, j.x + j.n * cols);
          std::vector<float> alone(ys[k].size(), kSentinel);
          matmul(*j.w, xg.data(), j.n, cols, alone.data(), j.ldy, &two);
          EXPECT_EQ(0, std::memcmp(alone.data(), ys[k].data(), alone.size() * 4))
              << isa_name(isa) << (pack ? "/packed" : "") << " job " << k << (all ? " (all)" : "");
        }
      }
    }
}

// However many experts are active, a call is one pool run; a loop of matmul calls is one per job.
TEST(MatmulGrouped, OneBarrierPerCall) {
  const Experts gate(DType::kQ8_0, 16, 32, 64, 31, false), up(DType::kQ8_0, 16, 32, 64, 32, false);
  const std::vector<float> x = make_x(4, 64, 64, 33, false);
  const std::vector<int32_t> ids = route(4, 4, 16, 34);
  ExpertRows er;
  er.build(ids.data(), 4, 4, 16);
  ASSERT_GE(er.n_active(), 4);
  ThreadPool two(2);
  IsaGuard guard;
  for (Isa isa : fast_isas()) {
    set_active_isa(isa);
    Call c = gathered_call({&gate, &up}, er, 32);
    const uint32_t before = two.barriers();
    matmul_grouped(c.jobs.data(), static_cast<int>(c.jobs.size()), x.data(), 4, 64, &two);
    EXPECT_EQ(two.barriers() - before, 1u) << isa_name(isa);
    int64_t active_jobs = 0;
    for (const MatmulJob& j : c.jobs) {
      if (j.n == 0) continue;
      const std::vector<float> xg = gather(x.data(), 64, j.rows, j.n, 64);
      matmul(*j.w, xg.data(), j.n, 64, j.y, j.ldy, &two);
      ++active_jobs;
    }
    EXPECT_EQ(two.barriers() - before, 1u + static_cast<uint32_t>(active_jobs)) << isa_name(isa);
  }
}

// The ref ISA runs matmul_ref per job: exactly its result on the gathered rows.
TEST(MatmulGrouped, RefPathIsMatmulRefPerJob) {
  IsaGuard guard;
  set_active_isa(Isa::kRef);
  const Experts gate(DType::kQ4_K, 4, 5, 256, 11, false);
  const std::vector<float> x = make_x(6, 256, 260, 12, false);
  const std::vector<int32_t> ids = route(6, 2, 4, 13);
  ExpertRows er;
  er.build(ids.data(), 6, 2, 4);
  ThreadPool two(2);
  Call c = gathered_call({&gate}, er, 5);
  matmul_grouped(c.jobs.data(), static_cast<int>(c.jobs.size()), x.data(), 6, 260, &two);
  for (int64_t e = 0; e < 4; ++e) {
    const MatmulJob& j = c.jobs[static_cast<size_t>(e)];
    if (j.n == 0) continue;
    const std::vector<float> xg = gather(x.data(), 260, j.rows, j.n, 256);
    std::vector<float> ref(c.y[static_cast<size_t>(e)].size(), kSentinel);
    matmul_ref(*j.w, xg.data(), j.n, 256, ref.data(), 5, nullptr);
    EXPECT_EQ(ref, c.y[static_cast<size_t>(e)]) << "expert " << e;
  }
}

TEST(MatmulGrouped, RejectsBadJobs) {
  const Weights a = make_weights(DType::kQ8_0, 16, 64, 1), b = make_weights(DType::kQ8_0, 16, 32, 2);
  const std::vector<float> x = make_x(3, 64, 64, 3, false);
  std::vector<float> y(3 * 16);
  const int32_t rows[] = {0, 2, 3};
  MatmulJob bad_row{&a.view, 3, rows, nullptr, 0, y.data(), 16};
  EXPECT_THROW(matmul_grouped(&bad_row, 1, x.data(), 3, 64, nullptr), Error);  // row 3 of 3
  MatmulJob ok{&a.view, 2, rows, nullptr, 0, y.data(), 16};
  EXPECT_NO_THROW(matmul_grouped(&ok, 1, x.data(), 3, 64, nullptr));
  const MatmulJob mixed[] = {ok, {&b.view, 1, rows, nullptr, 0, y.data() + 32, 16}};
  EXPECT_THROW(matmul_grouped(mixed, 2, x.data(), 3, 64, nullptr), Error);  // 64 vs 32 cols
  MatmulJob no_x{&a.view, 1, nullptr, nullptr, 64, y.data(), 16};
  EXPECT_THROW(matmul_grouped(&no_x, 1, nullptr, 0, 0, nullptr), Error);  // own rows, no x
  MatmulJob no_w{nullptr, 1, rows, nullptr, 0, y.data(), 16};
  EXPECT_THROW(matmul_grouped(&no_w, 1, x.data(), 3, 64, nullptr), Error);
  MatmulJob narrow_y{&a.view, 1, rows, nullptr, 0, y.data(), 8};
  EXPECT_THROW(matmul_grouped(&narrow_y, 1, x.data(), 3, 64, nullptr), Error);  // ldy < rows
  EXPECT_NO_THROW(matmul_grouped(nullptr, 0, nullptr, 0, 0, nullptr));         // nothing to do
  {  // the reference reads the file's layout only
    IsaGuard guard;
    const PackedWeight p(a.view, nullptr);
    set_active_isa(Isa::kRef);
    MatmulJob packed{&p.view(), 1, rows, nullptr, 0, y.data(), 16};
    EXPECT_THROW(matmul_grouped(&packed, 1, x.data(), 3, 64, nullptr), Error);
  }
}

// ---- expert slices ---------------------------------------------------------------------------

TEST(ExpertMatrix, SlicesTheStackInEitherLayout) {
  const Weights s = make_weights(DType::kQ8_0, 4 * 48, 64, 21);
  for (int64_t e = 0; e < 4; ++e) {
    const WeightView v = expert_matrix(s.view, 4, e);
    EXPECT_EQ(v.rows, 48);
    EXPECT_EQ(v.cols, 64);
    EXPECT_EQ(v.row_stride, s.view.row_stride);
    EXPECT_EQ(static_cast<const uint8_t*>(v.data), s.bytes.data() + e * 48 * s.view.row_stride);
  }
  EXPECT_THROW(expert_matrix(s.view, 5, 0), Error);   // 192 rows are not 5 experts
  EXPECT_THROW(expert_matrix(s.view, 4, 4), Error);   // no expert 4
  EXPECT_THROW(expert_matrix(s.view, 4, -1), Error);
  EXPECT_TRUE(expert_stack_packable(48));
  EXPECT_FALSE(expert_stack_packable(17));
}

// The packed stack is each expert's packed matrix one after another, byte for byte, for every
// packable type: packing at load and the tile cache can treat the stack as one matrix.
TEST(ExpertMatrix, PackedStackEqualsEachExpertPacked) {
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const int64_t cols = dtype_info(type).block_size == 256 ? 512 : 96;
    const Weights s = make_weights(type, 3 * 32, cols, 22);
    const PackedWeight stack(s.view, nullptr);
    EXPECT_EQ(stack.bytes(), packed_bytes(s.view));
    for (int64_t e = 0; e < 3; ++e) {
      const PackedWeight own(expert_matrix(s.view, 3, e), nullptr);
      const WeightView v = expert_matrix(stack.view(), 3, e);
      EXPECT_EQ(v.layout, WeightLayout::kRows16);
      EXPECT_EQ(v.rows, 32);
      EXPECT_EQ(v.row_stride, own.view().row_stride);
      EXPECT_EQ(0, std::memcmp(v.data, own.view().data, own.bytes())) << dtype_name(type) << " expert " << e;
    }
    // Experts of 17 rows would share tiles: only whole-tile experts slice a packed stack.
    const Weights odd = make_weights(type, 2 * 17, cols, 23);
    const PackedWeight odd_stack(odd.view, nullptr);
    EXPECT_THROW(expert_matrix(odd_stack.view(), 2, 1), Error);
  }
}

}  // namespace
}  // namespace fulgur::kernels
