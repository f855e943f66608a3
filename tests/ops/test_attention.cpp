// Attention over the f16 KV cache: exact behaviour of the reference (one cell returns V, the
// causal mask, sinks, sequences), every runnable ISA against attention_ref on random cases
// (GQA, odd head dims, out-of-order cells, several sequences, windows, sinks), and the
// determinism contract (a row's bits do not depend on the batch, the pool, or cells it
// cannot see).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "ops_test_util.h"

namespace fulgur::kernels {
namespace {

using testing::expect_bitwise;
using testing::expect_close;
using testing::IsaGuard;
using testing::runnable_isas;

struct Case {
  int64_t head_dim = 64, n_kv = 2, group = 2, n_rows = 3, n_ctx = 96, n_cells = 50;
  AttnMask mask = AttnMask::kCausal;
  bool sinks = false;
  int n_seqs = 1;
  int32_t window = 0;
  float q_mag = 1.0f;
};

// Owns the buffers an AttentionArgs points into.
struct Problem {
  Case c;
  std::vector<float> q;            // [n_rows][n_heads][head_dim]
  std::vector<uint16_t> k, v;      // [n_kv][n_ctx][head_dim] f16
  std::vector<int32_t> cells, cell_pos, row_pos, row_seq;
  std::vector<uint64_t> cell_seq;  // [n_cells]
  std::vector<float> sinks;        // [n_heads]

  int64_t n_heads() const { return c.n_kv * c.group; }
  AttentionArgs args(float* out) const {
    AttentionArgs a;
    a.q = q.data();
    a.q_row_stride = n_heads() * c.head_dim;
    a.n_rows = c.n_rows;
    a.n_heads = n_heads();
    a.n_kv_heads = c.n_kv;
    a.head_dim = c.head_dim;
    a.k = k.data();
    a.v = v.data();
    a.n_ctx = c.n_ctx;
    a.cells = cells.data();
    a.cell_pos = cell_pos.data();
    a.cell_seq = c.n_seqs > 1 ? cell_seq.data() : nullptr;
    a.n_cells = static_cast<int64_t>(cells.size());
    a.row_pos = row_pos.data();
    a.row_seq = c.n_seqs > 1 ? row_seq.data() : nullptr;
    a.mask = c.mask;
    a.window = c.window;
    a.sinks = c.sinks ? sinks.data() : nullptr;
    a.out = out;
    a.out_row_stride = n_heads() * c.head_dim;
    return a;
  }
  size_t out_size() const { return static_cast<size_t>(c.n_rows * n_heads() * c.head_dim); }
};

Problem make_problem(const Case& c, std::mt19937& rng) {
  Problem p;
  p.c = c;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  p.q.resize(p.out_size());
  for (float& x : p.q) x = u(rng) * c.q_mag;
  const size_t kv = static_cast<size_t>(c.n_kv * c.n_ctx * c.head_dim);
  p.k.resize(kv);
  p.v.resize(kv);
  for (auto& x : p.k) x = f32_to_f16(u(rng) * 2.0f);
  for (auto& x : p.v) x = f32_to_f16(u(rng));
  std::vector<int32_t> perm(c.n_ctx);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);  // cells out of order
  p.cells.assign(perm.begin(), perm.begin() + c.n_cells);
  std::uniform_int_distribution<int32_t> pos(0, 40);
  for (int64_t j = 0; j < c.n_cells; ++j) {
    p.cell_pos.push_back(pos(rng));
    uint64_t bits = 0;
    while (bits == 0) bits = rng() & ((uint64_t{1} << c.n_seqs) - 1);  // may be shared
    p.cell_seq.push_back(bits);
  }
  std::uniform_int_distribution<int32_t> seq(0, c.n_seqs - 1), rpos(0, 45);
  for (int64_t r = 0; r < c.n_rows; ++r) {
    p.row_pos.push_back(rpos(rng));
    p.row_seq.push_back(seq(rng));
  }
  for (int64_t h = 0; h < p.n_heads(); ++h) p.sinks.push_back(u(rng) * 3.0f);
  return p;
}

float max_abs_v(const Problem& p) {
  float m = 0;
  for (uint16_t h : p.v) m = std::max(m, std::fabs(f16_to_f32(h)));
  return m;
}

TEST(AttentionRef, OneCellReturnsV) {
  std::mt19937 rng(30);
  Case c;
  c.n_cells = 1;
  c.n_rows = 2;
  Problem p = make_problem(c, rng);
  p.cell_pos[0] = 0;
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    std::vector<float> out(p.out_size());
    attention(p.args(out.data()));
    for (int64_t r = 0; r < c.n_rows; ++r) {
      for (int64_t h = 0; h < p.n_heads(); ++h) {
        const int64_t g = h / c.group;
        const uint16_t* vc = p.v.data() + (g * c.n_ctx + p.cells[0]) * c.head_dim;
        for (int64_t i = 0; i < c.head_dim; ++i)
          ASSERT_EQ(out[(r * p.n_heads() + h) * c.head_dim + i], f16_to_f32(vc[i]))
              << isa_name(isa) << " row " << r << " head " << h << " dim " << i;
      }
    }
  }
}

TEST(AttentionRef, EqualKeysAverageValues) {
  std::mt19937 rng(31);
  Case c;
  c.n_cells = 2;
  c.n_rows = 1;
  c.mask = AttnMask::kFull;
  Problem p = make_problem(c, rng);
  for (int64_t g = 0; g < c.n_kv; ++g)  // same key in both cells
    std::copy_n(p.k.begin() + (g * c.n_ctx + p.cells[0]) * c.head_dim, c.head_dim,
                p.k.begin() + (g * c.n_ctx + p.cells[1]) * c.head_dim);
  std::vector<float> out(p.out_size());
  attention_ref(p.args(out.data()));
  for (int64_t h = 0; h < p.n_heads(); ++h) {
    const int64_t g = h / c.group;
    for (int64_t i = 0; i < c.head_dim; ++i) {
      const double v0 = f16_to_f32(p.v[(g * c.n_ctx + p.cells[0]) * c.head_dim + i]);
      const double v1 = f16_to_f32(p.v[(g * c.n_ctx + p.cells[1]) * c.head_dim + i]);
      EXPECT_NEAR(out[h * c.head_dim + i], (v0 + v1) / 2, 1e-6);
    }
  }
}

TEST(AttentionRef, SinkJoinsTheDenominator) {
  std::mt19937 rng(32);
  Case c;
  c.n_cells = 1;
  c.n_rows = 1;
  c.sinks = true;
  Problem p = make_problem(c, rng);
  p.cell_pos[0] = 0;
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    std::vector<float> out(p.out_size());
    attention(p.args(out.data()));
    for (int64_t h = 0; h < p.n_heads(); ++h) {
      const int64_t g = h / c.group;
      const uint16_t* kc = p.k.data() + (g * c.n_ctx + p.cells[0]) * c.head_dim;
      const uint16_t* vc = p.v.data() + (g * c.n_ctx + p.cells[0]) * c.head_dim;
      double s = 0;
      for (int64_t i = 0; i < c.head_dim; ++i) s += p.q[h * c.head_dim + i] * f16_to_f32(kc[i]);
      s /= std::sqrt(static_cast<double>(c.head_dim));
      const double w = std::exp(s) / (std::exp(s) + std::exp(static_cast<double>(p.sinks[h])));
      for (int64_t i = 0; i < c.head_dim; ++i)
        EXPECT_NEAR(out[h * c.head_dim + i], w * f16_to_f32(vc[i]), 2e-6) << isa_name(isa);
    }
  }
}

TEST(AttentionRef, CausalMaskBlocksFutureAndSequencesSeparate) {
  std::mt19937 rng(33);
  Case c;
  c.n_seqs = 2;
  c.n_rows = 4;
  Problem p = make_problem(c, rng);
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    std::vector<float> before(p.out_size()), after(p.out_size());
    attention(p.args(before.data()));
    // Scribble over K and V of every cell that no row may see; outputs must not move.
    Problem q = p;
    for (int64_t j = 0; j < c.n_cells; ++j) {
      bool seen = false;
      for (int64_t r = 0; r < c.n_rows; ++r)
        seen = seen || (((p.cell_seq[j] >> p.row_seq[r]) & 1) && p.cell_pos[j] <= p.row_pos[r]);
      if (seen) continue;
      for (int64_t g = 0; g < c.n_kv; ++g)
        for (int64_t i = 0; i < c.head_dim; ++i) {
          q.k[(g * c.n_ctx + p.cells[j]) * c.head_dim + i] = f32_to_f16(50.0f);
          q.v[(g * c.n_ctx + p.cells[j]) * c.head_dim + i] = f32_to_f16(-9.0f);
        }
    }
    attention(q.args(after.data()));
    expect_bitwise(after.data(), before.data(), after.size(), std::string("masked cells ") + isa_name(isa));
    // The full mask does see them.
    q.c.mask = AttnMask::kFull;
    attention(q.args(after.data()));
    bool changed = false;
    for (size_t i = 0; i < after.size(); ++i) changed = changed || after[i] != before[i];
    EXPECT_TRUE(changed) << isa_name(isa);
  }
}

TEST(AttentionRef, NoVisibleCellGivesZeros) {
  std::mt19937 rng(34);
  Case c;
  c.sinks = true;
  Problem p = make_problem(c, rng);
  for (auto& pos : p.cell_pos) pos = 1000;  // all in the future
  for (Isa isa : runnable_isas()) {
    IsaGuard guard(isa);
    std::vector<float> out(p.out_size(), 7.0f);
    attention(p.args(out.data()));
    for (float x : out) ASSERT_EQ(x, 0.0f) << isa_name(isa);
  }
}

TEST(Attention, RejectsBadArgs) {
  std::mt19937 rng(35);
  Problem p = make_problem(Case{}, rng);
  std::vector<float> out(p.out_size());
  AttentionArgs a = p.args(out.data());
  a.n_heads = 3;  // not a multiple of n_kv_heads = 2
  EXPECT_THROW(attention(a), Error);
  a = p.args(out.data());
  p.cells[4] = static_cast<int32_t>(p.c.n_ctx);
  EXPECT_THROW(attention(a), Error);
  p.cells[4] = 0;
  a.cell_seq = p.cell_seq.data();  // without row_seq
  EXPECT_THROW(attention(a), Error);
}

TEST(Attention, MatchesRef) {
  std::mt19937 rng(36);
  ThreadPool pool(2);
  int n_cases = 0;
  for (int64_t hd : {64, 80, 128, 256, 17}) {  // 64, 128, 256: compile-time head_dim paths
    for (int64_t group : {1, 2, 4}) {
      for (int64_t rows = 1; rows <= 9; rows += (rows < 3 ? 1 : 3)) {
        for (AttnMask mask : {AttnMask::kCausal, AttnMask::kFull}) {
          Case c;
          c.head_dim = hd;
          c.group = group;
          c.n_kv = 1 + (n_cases % 3);
          c.n_rows = rows;
          c.mask = mask;
          c.sinks = n_cases % 2 == 1;
          c.n_seqs = 1 + (n_cases % 3);
          c.window = n_cases % 5 == 4 ? 9 : 0;
          c.n_cells = std::uniform_int_distribution<int64_t>(1, 96)(rng);
          c.q_mag = n_cases % 4 == 0 ? 4.0f : 1.0f;  // peakier softmax now and then
          ++n_cases;
          const Problem p = make_problem(c, rng);
          std::vector<float> want(p.out_size());
          attention_ref(p.args(want.data()));
          const float tol = 2e-5f * max_abs_v(p);
          for (Isa isa : runnable_isas()) {
            IsaGuard guard(isa);
            for (ThreadPool* tp : {static_cast<ThreadPool*>(nullptr), &pool}) {
              std::vector<float> got(p.out_size(), NAN);
              attention(p.args(got.data()), tp);
              expect_close(got.data(), want.data(), got.size(), 0.0, tol + 1e-6,
                           std::string("attention ") + isa_name(isa) + " hd=" + std::to_string(hd) +
                               " group=" + std::to_string(group) + " rows=" + std::to_string(rows) +
                               " cells=" + std::to_string(c.n_cells) + " seqs=" +
                               std::to_string(c.n_seqs) + (c.sinks ? " sinks" : "") +
                               (mask == AttnMask::kFull ? " full" : " causal"));
            }
          }
        }
      }
    }
  }
}

// A row computed alone, in a batch, on a pool, or with trailing cells it cannot see gives the
// same bits: this is what keeps greedy verification lossless.
TEST(Attention, RowResultsDoNotDependOnTheBatch) {
  std::mt19937 rng(37);
  ThreadPool pool(2);
  for (int64_t hd : {64, 80, 128}) {
    Case c;
    c.head_dim = hd;
    c.group = 4;
    c.n_kv = 2;
    c.n_rows = 7;
    c.n_cells = 80;
    c.n_seqs = 2;
    c.sinks = true;
    Problem p = make_problem(c, rng);
    for (Isa isa : runnable_isas()) {
      IsaGuard guard(isa);
      std::vector<float> batch(p.out_size()), pooled(p.out_size());
      attention(p.args(batch.data()));
      attention(p.args(pooled.data()), &pool);
      expect_bitwise(pooled.data(), batch.data(), batch.size(), std::string("pool ") + isa_name(isa));
      const int64_t width = p.n_heads() * hd;
      for (int64_t r = 0; r < c.n_rows; ++r) {
        // Alone, with 37 extra cells appended that are in this row's future.
        Problem one = p;
        for (int j = 0; j < 37; ++j) {
          one.cells.push_back(static_cast<int32_t>(j));
          one.cell_pos.push_back(p.row_pos[r] + 1 + j % 5);
          one.cell_seq.push_back(3);
        }
        std::vector<float> out(width);
        AttentionArgs a = one.args(out.data());
        a.q = p.q.data() + r * width;
        a.n_rows = 1;
        a.row_pos = p.row_pos.data() + r;
        a.row_seq = p.row_seq.data() + r;
        attention(a);
        expect_bitwise(out.data(), batch.data() + r * width, width,
                       std::string("row alone ") + isa_name(isa) + " r=" + std::to_string(r));
      }
    }
  }
}

// The cache as decoding fills it: one sequence, cells in order and consecutive, positions equal
// to the cells. A row alone over whole tiles it sees reads the f16 rows in place (no converted
// tile); in a batch it goes through the converted tiles. Both must give the reference's values
// and each other's bits, with a partial last tile and with a gap that breaks contiguity.
TEST(Attention, DecodeRowOverConsecutiveCellsMatchesBatchAndRef) {
  std::mt19937 rng(38);
  ThreadPool pool(2);
  for (int64_t hd : {64, 128, 256, 80}) {
    for (int64_t n_cells : {64, 150}) {
      for (bool gap : {false, true}) {
        Case c;
        c.head_dim = hd;
        // GQA groups that take every block of heads the f16-row scores use (4, 2 and 1, and more
        // than 8 heads, done 8 at a time).
        c.group = hd == 64 ? 9 : hd == 128 ? 4 : hd == 256 ? 3 : 7;
        c.n_kv = 2;
        c.n_rows = 5;
        c.n_ctx = 200;
        c.n_cells = n_cells;
        c.sinks = hd == 64;
        Problem p = make_problem(c, rng);
        p.cells.clear();
        p.cell_pos.clear();
        for (int32_t j = 0; j < n_cells; ++j) {
          p.cells.push_back(gap && j >= 40 ? j + 3 : j);  // the gap: cells 40.. moved up by 3
          p.cell_pos.push_back(j);
        }
        for (int64_t r = 0; r < c.n_rows; ++r) p.row_pos[r] = static_cast<int32_t>(n_cells - c.n_rows + r);
        std::vector<float> want(p.out_size());
        attention_ref(p.args(want.data()));
        const float tol = 2e-5f * max_abs_v(p);
        const int64_t width = p.n_heads() * hd;
        for (Isa isa : runnable_isas()) {
          IsaGuard guard(isa);
          const std::string what = std::string(isa_name(isa)) + " hd=" + std::to_string(hd) +
                                   " cells=" + std::to_string(n_cells) + (gap ? " gap" : "");
          std::vector<float> batch(p.out_size());
          attention(p.args(batch.data()), &pool);
          expect_close(batch.data(), want.data(), batch.size(), 0.0, tol + 1e-6, "batch " + what);
          for (int64_t r = 0; r < c.n_rows; ++r) {
            std::vector<float> out(width);
            AttentionArgs a = p.args(out.data());
            a.q = p.q.data() + r * width;
            a.n_rows = 1;
            a.row_pos = p.row_pos.data() + r;
            attention(a, &pool);
            expect_bitwise(out.data(), batch.data() + r * width, width,
                           "row alone " + what + " r=" + std::to_string(r));
          }
        }
      }
    }
  }
}

// The cache in blocks of B cells (model/kv_cache.h): the same K and V copied into blocks whose
// padding holds NaNs give the bits of the one-run layout, on every ISA and in the reference,
// for rows alone (direct reads, with tiles that straddle a block edge when B is no multiple of
// the tile) and in batches, over consecutive and scattered cells of several sequences.
TEST(Attention, ABlockedCacheGivesTheBitsOfOneRun) {
  std::mt19937 rng(39);
  ThreadPool pool(2);
  for (int64_t hd : {64, 128, 80}) {
    for (int64_t B : {32, 48, 64}) {
      for (bool consecutive : {true, false}) {
        Case c;
        c.head_dim = hd;
        c.n_kv = 2;
        c.n_rows = 5;
        c.n_ctx = 200;
        c.n_cells = 150;
        c.n_seqs = consecutive ? 1 : 3;
        Problem p = make_problem(c, rng);
        if (consecutive) {
          for (int32_t j = 0; j < c.n_cells; ++j) p.cells[j] = p.cell_pos[j] = j;
          for (int64_t r = 0; r < c.n_rows; ++r) p.row_pos[r] = static_cast<int32_t>(c.n_cells - c.n_rows + r);
        }
        const int64_t stride = c.n_kv * B * hd + 48;  // padding between blocks
        const int64_t n_blocks = (c.n_ctx + B - 1) / B;
        std::vector<uint16_t> kb(static_cast<size_t>(n_blocks * stride), 0x7e00), vb(kb);  // f16 NaN
        for (int64_t g = 0; g < c.n_kv; ++g) {
          for (int64_t cell = 0; cell < c.n_ctx; ++cell) {
            const int64_t from = (g * c.n_ctx + cell) * hd, to = kv_row_offset(B, stride, hd, g, cell);
            std::copy_n(p.k.begin() + from, hd, kb.begin() + to);
            std::copy_n(p.v.begin() + from, hd, vb.begin() + to);
          }
        }
        const std::string what = "hd=" + std::to_string(hd) + " B=" + std::to_string(B) +
                                 (consecutive ? " consecutive" : " scattered");
        const int64_t width = p.n_heads() * hd;
        auto blocked = [&](float* out) {
          AttentionArgs a = p.args(out);
          a.k = kb.data();
          a.v = vb.data();
          a.kv_block_cells = B;
          a.kv_block_stride = stride;
          return a;
        };
        std::vector<float> want(p.out_size()), got(p.out_size());
        attention_ref(p.args(want.data()));
        attention_ref(blocked(got.data()));
        expect_bitwise(got.data(), want.data(), got.size(), "ref " + what);
        for (Isa isa : runnable_isas()) {
          IsaGuard guard(isa);
          for (int64_t rows : {c.n_rows, int64_t{1}}) {
            for (int64_t r0 = 0; r0 < c.n_rows; r0 += rows) {
              std::vector<float> one(static_cast<size_t>(rows * width)), two(one.size());
              AttentionArgs a = p.args(one.data()), b = blocked(two.data());
              for (AttentionArgs* x : {&a, &b}) {
                x->q = p.q.data() + r0 * width;
                x->n_rows = rows;
                x->row_pos = p.row_pos.data() + r0;
                x->row_seq = x->row_seq != nullptr ? p.row_seq.data() + r0 : nullptr;
              }
              attention(a, &pool);
              attention(b, &pool);
              expect_bitwise(two.data(), one.data(), one.size(),
                             std::string(isa_name(isa)) + " " + what + " rows=" + std::to_string(rows) +
                                 " r0=" + std::to_string(r0));
            }
          }
        }
      }
    }
  }
}

TEST(Attention, ABlockTooSmallForItsHeadsIsRefused) {
  std::mt19937 rng(40);
  Problem p = make_problem(Case{}, rng);
  std::vector<float> out(p.out_size());
  AttentionArgs a = p.args(out.data());
  a.kv_block_cells = 32;
  a.kv_block_stride = a.n_kv_heads * 32 * a.head_dim - 1;
  try {
    attention(a);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kv_block_stride"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fulgur::kernels
