// matmul dispatch: argument checks, activation quantization into the caller's workspace, the
// split of the output across the pool, and the active family's kernels (table.h).
#include "kernels/matmul.h"

#include <algorithm>
#include <iterator>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"
#include "kernels/table.h"

namespace fulgur::kernels {
namespace {

constexpr int64_t kAlign = 64;  // cache line: every activation row starts on one

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The quantized activations of one call. Owned by the calling thread (pool workers only read
// it during the call), grown to the largest n * cols seen and never shrunk, so steady-state
// calls allocate nothing.
struct ActWorkspace {
  std::vector<uint8_t> bytes;
  ActQ8 view(int64_t n, int64_t kp) {
    // q: [n][kp] int8, d: [n][kp/4] f32, s: [n][kp/16] f32; kp is a multiple of 256, so every
    // row of each array starts 64-byte aligned once the bases are.
    const int64_t q_bytes = n * kp, d_bytes = n * kp, s_bytes = n * kp / 4;
    const auto need = static_cast<size_t>(q_bytes + d_bytes + s_bytes + kAlign);
    if (bytes.size() < need) bytes.resize(need);
    auto base = reinterpret_cast<uintptr_t>(bytes.data());
    base = (base + kAlign - 1) / kAlign * kAlign;
    ActQ8 a;
    a.q = reinterpret_cast<int8_t*>(base);
    a.d = reinterpret_cast<float*>(base + q_bytes);
    a.s = reinterpret_cast<float*>(base + q_bytes + d_bytes);
    a.kp = kp;
    return a;
  }
};

// The calling thread's workspace, for n rows of kp.
ActQ8 act_workspace(int64_t n, int64_t kp) {
  thread_local ActWorkspace ws;
  return ws.view(n, kp);
}

}  // namespace

bool matmul_supports(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
    case DType::kTQ1_0:
    case DType::kTQ2_0:
    case DType::kMXFP4:
    case DType::kNVFP4:
      return true;
    default:
      return false;
  }
}

bool uses_act_q8(DType type) {
  return matmul_supports(type) && type != DType::kF32 && type != DType::kF16 &&
         type != DType::kBF16 && act_block(type) == kActBlock;
}

int64_t act_block(DType type) {
  // The codebook and ternary types: their kernels quantize per super-block (simd/iq_units.inc).
  static constexpr DType kOwn[] = {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S,
                                   DType::kIQ3_XXS, DType::kIQ3_S,  DType::kIQ1_S,
                                   DType::kIQ1_M,   DType::kTQ1_0,  DType::kTQ2_0};
  return std::find(std::begin(kOwn), std::end(kOwn), type) != std::end(kOwn) ? 256 : kActBlock;
}

void check_matmul_args(const WeightView& w, const float* x, int64_t n, int64_t ldx, const float* y,
                       int64_t ldy) {
  FULGUR_CHECK(matmul_supports(w.type), "matmul: weight type ", dtype_name(w.type), " (id ",
               static_cast<uint32_t>(w.type),
               ") is not supported; expected f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, "
               "q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, iq1_s, "
               "iq1_m, tq1_0, tq2_0, mxfp4 or nvfp4");
  const DTypeInfo& info = dtype_info(w.type);
  FULGUR_CHECK(w.rows >= 0 && w.cols >= 0, "matmul: weight shape ", w.rows, " x ", w.cols,
               " must not be negative");
  FULGUR_CHECK(w.cols % info.block_size == 0, "matmul: weight cols ", w.cols,
               " is not a multiple of the ", info.name, " block size ", info.block_size);
  FULGUR_CHECK(w.rows <= 1 || w.row_stride >= row_bytes(w.type, w.cols), "matmul: row_stride ",
               w.row_stride, " is below the ", row_bytes(w.type, w.cols), " bytes of one ",
               info.name, " row of ", w.cols, " elements");
  FULGUR_CHECK(n >= 0, "matmul: activation row count ", n, " must not be negative");
  if (n == 0 || w.rows == 0) return;
  FULGUR_CHECK(ldx >= w.cols, "matmul: ldx ", ldx, " is below cols ", w.cols);
  FULGUR_CHECK(ldy >= w.rows, "matmul: ldy ", ldy, " is below rows ", w.rows);
  FULGUR_CHECK(x != nullptr && y != nullptr && (w.data != nullptr || w.cols == 0),
               "matmul: null data pointer (weights, x or y)");
}

void matmul(const WeightView& w, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
            ThreadPool* pool) {
  const MatmulOut out{&w, y, ldy};
  matmul_many(&out, 1, x, n, ldx, pool);
}

namespace {

// Quantizes rows [0, n) of x (cols wide) into rows [first, first + n) of act, zero past cols
// (the kernels read whole units).
void quantize_rows(const KernelTable& kt, const float* x, int64_t n, int64_t ldx, int64_t cols,
                   const ActQ8& act, int64_t first) {
  const int64_t kp = act.kp;
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * ldx;
    const int64_t a = first + r;
    int8_t* q = act.q + a * kp;
    float* d = act.d + a * (kp / 4);
    float* s16 = act.s + a * (kp / 16);
    kt.quantize_act_row(xr, cols, q, d, s16);
    std::memset(q + cols, 0, static_cast<size_t>(kp - cols));
    std::memset(d + cols / 4, 0, static_cast<size_t>((kp - cols) / 4) * sizeof(float));
    std::memset(s16 + cols / 16, 0, static_cast<size_t>((kp - cols) / 16) * sizeof(float));
  }
}

// The fast-path checks every op makes of each matrix.
void check_fast_args(const WeightView& w, const float* x, int64_t n, int64_t ldx, const float* y,
                     int64_t ldy, Isa isa) {
  check_matmul_args(w, x, n, ldx, y, ldy);
  FULGUR_CHECK(w.layout == WeightLayout::kRows || packed_rect(w.type, isa) != nullptr,
               "matmul: packed (kRows16) ", dtype_name(w.type), " weights have no ", isa_name(isa),
               " kernel");
}

// Weight bytes of one unit are counted as costing as much as this many activation rows' worth
// of arithmetic on them when the threads split an op's work. Only its size relative to the
// jobs' row counts matters: at one row per job (decode) the split is by bytes alone, and a job
// of many rows (prefill) weighs about in proportion to its rows. A rough balance of a unit's
// DRAM time against the int8 kernels' per-row time, not a tuned figure: results do not depend
// on the split, only the threads' balance does.
constexpr int64_t kUnitRowCost = 8;

// One task of an op and its activation rows: rows 0 .. n-1 of t.x (and t.act), or the rows
// listed in `rows`.
struct Piece {
  MatmulTask t;
  int64_t n = 0;
  const int32_t* rows = nullptr;  // [n] rows of t.x / t.act, or null
};

// The task of rows [r0, r1) of a gathered piece, those rows copied to this thread's contiguous
// buffers (the ActQ8 rows where the type uses them, the f32 rows otherwise), writing y from row r0.
// The kernels then read consecutive rows as in any matmul, so the bits are the same; rows read
// in place from the shared buffer measured about 10 % slower in the row-major kernels (their 8
// rows of a register tile, 2 KiB apart at random, collide in L1 sets). The copy is a few KiB
// per row against the row's cols * rows multiply-adds.
MatmulTask contiguous_rows(const Piece& p, int64_t r0, int64_t r1, int64_t kp) {
  MatmulTask t = p.t;
  const int64_t n = r1 - r0, cols = t.w->cols;
  t.y += r0 * t.ldy;
  if (uses_act_q8(t.w->type)) {
    thread_local ActWorkspace ws;  // not act_workspace(): the caller's holds the source rows
    t.act = ws.view(n, kp);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = p.rows[r0 + i];
      std::memcpy(t.act.q + i * kp, p.t.act.q + a * kp, static_cast<size_t>(kp));
      std::memcpy(t.act.d + i * (kp / 4), p.t.act.d + a * (kp / 4), static_cast<size_t>(kp));
      std::memcpy(t.act.s + i * (kp / 16), p.t.act.s + a * (kp / 16), static_cast<size_t>(kp / 4));
    }
  } else {
    thread_local std::vector<float> xs;  // [n][cols]
    if (xs.size() < static_cast<size_t>(n * cols)) xs.resize(static_cast<size_t>(n * cols));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(xs.data() + i * cols, p.t.x + p.rows[r0 + i] * p.t.ldx, static_cast<size_t>(cols) * 4);
    t.x = xs.data();
    t.ldx = cols;
  }
  return t;
}

// Runs every piece as one pool run (one barrier). Every piece has the same cols; kp is their
// activation row length.
void run_pieces(const KernelTable& kt, const Piece* pieces, int n_pieces, int64_t kp,
                ThreadPool* pool) {
  const int nt = pool != nullptr ? pool->size() : 1;
  // Per piece: 16-row units (prefix sums), the cost of one unit, the costs' prefix sums. Owned
  // by the calling thread, grown to the most pieces seen.
  thread_local std::vector<int64_t> buf;
  if (buf.size() < static_cast<size_t>(3 * n_pieces + 2)) buf.resize(static_cast<size_t>(3 * n_pieces + 2));
  int64_t* units = buf.data();                // [n_pieces + 1]
  int64_t* unit_cost = units + n_pieces + 1;  // [n_pieces]
  int64_t* cost = unit_cost + n_pieces;       // [n_pieces + 1]
  units[0] = cost[0] = 0;
  int64_t total_rows = 0, n_max = 0;
  for (int k = 0; k < n_pieces; ++k) {
    const WeightView& w = *pieces[k].t.w;
    const int64_t nu = pieces[k].n > 0 ? (w.rows + kPackRows - 1) / kPackRows : 0;
    units[k + 1] = units[k] + nu;
    // Threads split the weight bytes, not the unit count, so a Q6_K matrix beside Q4_K ones
    // (attn_v in Q4_K_M) does not leave one thread waiting for the other; and an expert's bytes
    // weigh by its rows, so a popular expert is not one thread's alone.
    const auto bytes = static_cast<int64_t>(w.layout == WeightLayout::kRows16 ? w.row_stride
                                                                               : w.row_stride * kPackRows);
    unit_cost[k] = std::max<int64_t>(1, bytes) * (pieces[k].n + kUnitRowCost);
    cost[k + 1] = cost[k] + nu * unit_cost[k];
    if (pieces[k].n > 0) total_rows += w.rows;
    n_max = std::max(n_max, pieces[k].n);
  }
  if (units[n_pieces] == 0) return;
  // The first unit at or after the cost offset c (rounded to the nearest unit boundary).
  auto unit_at = [&](int64_t c) {
    const int k = static_cast<int>(std::upper_bound(cost + 1, cost + n_pieces, c) - (cost + 1));
    const int64_t in = (c - cost[k] + unit_cost[k] / 2) / unit_cost[k];
    return std::min(units[k + 1], units[k] + in);
  };

  // Runs rows [o0, o1) x activation rows [r0, r1) of piece k on this thread.
  auto rect = [&](int k, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
    const Piece& p = pieces[k];
    MatmulTask t = p.t;
    if (p.rows != nullptr) {
      t = contiguous_rows(p, r0, r1, kp);
      r1 -= r0;
      r0 = 0;
    }
    if (t.w->layout == WeightLayout::kRows16) {
      packed_rect(t.w->type, kt.isa)(t, o0, o1, r0, r1);
      return;
    }
    // [kp / 16 + 16] f32 per thread: the group coefficients of one weight row.
    thread_local std::vector<float> scratch;
    const auto need = static_cast<size_t>(kp / 16 + 16);
    if (scratch.size() < need) scratch.resize(need);
    kt.matmul_rect(t, o0, o1, r0, r1, scratch.data());
  };
  // Split the output rows in 16-row units (each thread reads a disjoint slice of the weights:
  // what decode needs; whole units keep packed tiles intact); with fewer output rows than the
  // threads can share, split the activation rows instead.
  const bool split_units = units[n_pieces] >= 2 * nt || total_rows >= n_max;
  auto job = [&](int ti, int ntt) {
    if (!split_units) {
      for (int k = 0; k < n_pieces; ++k) {
        const int64_t r0 = pieces[k].n * ti / ntt, r1 = pieces[k].n * (ti + 1) / ntt;
        if (r0 < r1) rect(k, 0, pieces[k].t.w->rows, r0, r1);
      }
      return;
    }
    const int64_t u0 = ti == 0 ? 0 : unit_at(cost[n_pieces] * ti / ntt);
    const int64_t u1 = ti + 1 == ntt ? units[n_pieces] : unit_at(cost[n_pieces] * (ti + 1) / ntt);
    for (int k = 0; k < n_pieces; ++k) {
      const int64_t a = std::max(u0, units[k]) - units[k], b = std::min(u1, units[k + 1]) - units[k];
      if (a >= b) continue;
      const int64_t rows = pieces[k].t.w->rows;
      rect(k, a * kPackRows, std::min(rows, b * kPackRows), 0, pieces[k].n);
    }
  };
  if (nt > 1)
    pool->run(job);
  else
    job(0, 1);
}

// y[r][0 .. rows) = 0 for r < n: the product over zero columns.
void zero_rows(float* y, int64_t n, int64_t ldy, int64_t rows) {
  for (int64_t r = 0; r < n; ++r) std::memset(y + r * ldy, 0, static_cast<size_t>(rows) * 4);
}

}  // namespace

void matmul_many(const MatmulOut* outs, int n_outs, const float* x, int64_t n, int64_t ldx,
                 ThreadPool* pool) {
  FULGUR_CHECK(n_outs >= 1 && n_outs <= kMaxMatmulOuts, "matmul_many: ", n_outs,
               " matrices; expected 1 to ", kMaxMatmulOuts);
  const KernelTable& kt = kernel_table();
  const Isa isa = kt.isa;
  if (isa == Isa::kRef) {
    for (int k = 0; k < n_outs; ++k) matmul_ref(*outs[k].w, x, n, ldx, outs[k].y, outs[k].ldy, pool);
    return;
  }
  const int64_t cols = outs[0].w->cols;
  bool any_q8 = false;
  for (int k = 0; k < n_outs; ++k) {
    const MatmulOut& o = outs[k];
    check_fast_args(*o.w, x, n, ldx, o.y, o.ldy, isa);
    FULGUR_CHECK(o.w->cols == cols, "matmul_many: matrix ", k, " has ", o.w->cols,
                 " columns, matrix 0 has ", cols, " (they share the activations)");
    any_q8 = any_q8 || uses_act_q8(o.w->type);
  }
  if (n == 0) return;
  if (cols == 0) {
    for (int k = 0; k < n_outs; ++k) zero_rows(outs[k].y, n, outs[k].ldy, outs[k].w->rows);
    return;
  }
  // One task per matrix; they share the activations, quantized once on the calling thread so
  // the op costs one barrier: quantizing is O(n * cols) against the product's
  // O(n * cols * rows), a few percent of a prefill.
  const int64_t kp = round_up(cols, kActPad);
  ActQ8 act;
  if (any_q8) {
    act = act_workspace(n, kp);
    quantize_rows(kt, x, n, ldx, cols, act, 0);
  }
  Piece pieces[kMaxMatmulOuts];
  for (int k = 0; k < n_outs; ++k) pieces[k] = {{outs[k].w, x, ldx, act, outs[k].y, outs[k].ldy}, n, nullptr};
  run_pieces(kt, pieces, n_outs, kp, pool);
}

void matmul_grouped(const MatmulJob* jobs, int n_jobs, const float* x, int64_t n_x, int64_t ldx,
                    ThreadPool* pool) {
  FULGUR_CHECK(n_jobs >= 0 && (n_jobs == 0 || jobs != nullptr), "matmul_grouped: ", n_jobs,
               " jobs at ", static_cast<const void*>(jobs));
  FULGUR_CHECK(n_x >= 0, "matmul_grouped: shared row count ", n_x, " must not be negative");
  const KernelTable& kt = kernel_table();
  const Isa isa = kt.isa;
  int64_t cols = -1, private_rows = 0;  // private_rows: of ungathered int8-path jobs
  bool shared_q8 = false;                // a gathered job is on the int8 path
  for (int k = 0; k < n_jobs; ++k) {
    const MatmulJob& j = jobs[k];
    FULGUR_CHECK(j.w != nullptr, "matmul_grouped: job ", k, " has no weight matrix");
    const bool gathered = j.rows != nullptr;
    if (isa == Isa::kRef)
      check_matmul_args(*j.w, gathered ? x : j.x, j.n, gathered ? ldx : j.ldx, j.y, j.ldy);
    else
      check_fast_args(*j.w, gathered ? x : j.x, j.n, gathered ? ldx : j.ldx, j.y, j.ldy, isa);
    if (j.n == 0) continue;
    if (cols < 0) cols = j.w->cols;
    FULGUR_CHECK(j.w->cols == cols, "matmul_grouped: job ", k, " has ", j.w->cols,
                 " columns, an earlier job ", cols, " (they share one activation format)");
    if (gathered) {
      for (int64_t i = 0; i < j.n; ++i)
        FULGUR_CHECK(j.rows[i] >= 0 && j.rows[i] < n_x, "matmul_grouped: job ", k, " row ", i,
                     " gathers shared row ", j.rows[i], ", outside the ", n_x, " shared rows");
      shared_q8 = shared_q8 || uses_act_q8(j.w->type);
    } else if (uses_act_q8(j.w->type)) {
      private_rows += j.n;
    }
  }
  if (cols < 0) return;  // every job is empty
  if (isa == Isa::kRef) {
    // [n][cols] f32: one job's rows gathered (the oracle may allocate; it grows once anyway).
    thread_local std::vector<float> gathered;
    for (int k = 0; k < n_jobs; ++k) {
      const MatmulJob& j = jobs[k];
      if (j.n == 0) continue;
      if (j.rows == nullptr) {
        matmul_ref(*j.w, j.x, j.n, j.ldx, j.y, j.ldy, pool);
        continue;
      }
      if (gathered.size() < static_cast<size_t>(j.n * cols)) gathered.resize(static_cast<size_t>(j.n * cols));
      for (int64_t i = 0; i < j.n; ++i)
        std::memcpy(gathered.data() + i * cols, x + j.rows[i] * ldx, static_cast<size_t>(cols) * 4);
      matmul_ref(*j.w, gathered.data(), j.n, cols, j.y, j.ldy, pool);
    }
    return;
  }
  if (cols == 0) {
    for (int k = 0; k < n_jobs; ++k) zero_rows(jobs[k].y, jobs[k].n, jobs[k].ldy, jobs[k].w->rows);
    return;
  }
  // The quantized rows: the n_x shared rows first, then each ungathered job's own rows, each
  // quantized once on the calling thread (as matmul_many, so the op is one barrier).
  const int64_t kp = round_up(cols, kActPad);
  const int64_t n_shared = shared_q8 ? n_x : 0;
  ActQ8 act;
  if (n_shared + private_rows > 0) {
    act = act_workspace(n_shared + private_rows, kp);
    quantize_rows(kt, x, n_shared, ldx, cols, act, 0);
  }
  thread_local std::vector<Piece> pieces;
  if (pieces.size() < static_cast<size_t>(n_jobs)) pieces.resize(static_cast<size_t>(n_jobs));
  int64_t next = n_shared;  // the next free quantized row
  for (int k = 0; k < n_jobs; ++k) {
    const MatmulJob& j = jobs[k];
    Piece& p = pieces[static_cast<size_t>(k)];
    if (j.rows != nullptr || j.n == 0) {
      p = {{j.w, x, ldx, act, j.y, j.ldy}, j.n, j.rows};
      continue;
    }
    ActQ8 own;  // the job's rows in the workspace (int8 paths only)
    if (uses_act_q8(j.w->type)) {
      own = act;
      own.q += next * kp;
      own.d += next * (kp / 4);
      own.s += next * (kp / 16);
      quantize_rows(kt, j.x, j.n, j.ldx, cols, act, next);
      next += j.n;
    }
    p = {{j.w, j.x, j.ldx, own, j.y, j.ldy}, j.n, nullptr};
  }
  run_pieces(kt, pieces.data(), n_jobs, kp, pool);
}

}  // namespace fulgur::kernels
