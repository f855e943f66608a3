// Attention dispatch: argument validation, the split into (KV head, row block) units over the
// thread pool, and per-thread scratch (grown once per thread, then reused: no allocation in
// the token loop once the largest shape has been seen).
#include "kernels/attention.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/table.h"

namespace fulgur::kernels {
namespace {

// Most query rows one unit carries: bounds the accumulators ([rows][group][head_dim] f32) so
// they stay in L2 next to the K/V tiles, while still sharing each converted tile across a
// whole verification batch.
constexpr int64_t kMaxUnitRows = 16;

void validate(const AttentionArgs& a) {
  FULGUR_CHECK(a.q != nullptr && a.k != nullptr && a.v != nullptr && a.out != nullptr,
               "attention: q, k, v and out must be non-null");
  FULGUR_CHECK(a.n_rows >= 0 && a.n_cells >= 0, "attention: n_rows = ", a.n_rows,
               ", n_cells = ", a.n_cells, ", expected >= 0");
  FULGUR_CHECK(a.head_dim > 0, "attention: head_dim = ", a.head_dim, ", expected > 0");
  FULGUR_CHECK(a.n_kv_heads > 0 && a.n_heads > 0 && a.n_heads % a.n_kv_heads == 0,
               "attention: n_heads = ", a.n_heads, " must be a positive multiple of n_kv_heads = ",
               a.n_kv_heads);
  FULGUR_CHECK(a.q_row_stride >= a.n_heads * a.head_dim, "attention: q_row_stride = ",
               a.q_row_stride, " < n_heads * head_dim = ", a.n_heads * a.head_dim);
  FULGUR_CHECK(a.out_row_stride >= a.n_heads * a.head_dim, "attention: out_row_stride = ",
               a.out_row_stride, " < n_heads * head_dim = ", a.n_heads * a.head_dim);
  FULGUR_CHECK(a.kv_block_cells == 0 ||
                   (a.kv_block_cells > 0 && a.kv_block_stride >= a.n_kv_heads * a.kv_block_cells * a.head_dim),
               "attention: kv_block_cells = ", a.kv_block_cells, " with kv_block_stride = ", a.kv_block_stride,
               " (a block holds n_kv_heads * kv_block_cells * head_dim = ",
               a.n_kv_heads * a.kv_block_cells * a.head_dim, " elements)");
  FULGUR_CHECK(a.window >= 0, "attention: window = ", a.window, ", expected >= 0");
  FULGUR_CHECK(a.mask == AttnMask::kCausal || a.mask == AttnMask::kFull,
               "attention: unknown mask mode ", static_cast<int>(a.mask));
  FULGUR_CHECK(a.n_cells == 0 || (a.cells != nullptr && a.cell_pos != nullptr),
               "attention: cells and cell_pos must be given for n_cells = ", a.n_cells);
  FULGUR_CHECK(a.n_rows == 0 || a.row_pos != nullptr, "attention: row_pos must be given");
  FULGUR_CHECK((a.cell_seq == nullptr) == (a.row_seq == nullptr),
               "attention: cell_seq and row_seq must be both given or both null");
  for (int64_t j = 0; j < a.n_cells; ++j) {
    FULGUR_CHECK(a.cells[j] >= 0 && a.cells[j] < a.n_ctx, "attention: cells[", j, "] = ",
                 a.cells[j], " is outside [0, n_ctx = ", a.n_ctx, ")");
  }
  if (a.row_seq != nullptr) {
    for (int64_t r = 0; r < a.n_rows; ++r) {
      FULGUR_CHECK(a.row_seq[r] >= 0 && a.row_seq[r] < 64, "attention: row_seq[", r, "] = ",
                   a.row_seq[r], ", expected a sequence id in [0, 64)");
    }
  }
}

// Carves one thread's scratch for units of up to `rows` rows out of a float vector.
AttnScratch carve(std::vector<float>& buf, int64_t rows, int64_t group, int64_t d) {
  const int64_t n_units = rows * group;
  const auto need = static_cast<size_t>(2 * kAttnTile * d + n_units * kAttnTile + 2 * n_units * d +
                                        3 * n_units + rows);
  if (buf.size() < need) buf.resize(need);
  float* p = buf.data();
  AttnScratch s{};
  s.q = p;
  p += n_units * d;
  s.k_tile = p;
  p += kAttnTile * d;
  s.v_tile = p;
  p += kAttnTile * d;
  s.scores = p;
  p += n_units * kAttnTile;
  s.acc = p;
  p += n_units * d;
  s.m = p;
  p += n_units;
  s.l = p;
  p += n_units;
  s.corr = p;
  p += n_units;
  s.vis = reinterpret_cast<uint32_t*>(p);
  return s;
}

}  // namespace

void attention(const AttentionArgs& a, ThreadPool* pool) {
  validate(a);
  const KernelTable& k = kernel_table();
  if (k.isa == Isa::kRef) {
    attention_ref(a);
    return;
  }
  if (a.n_rows == 0) return;
  const int nt = pool != nullptr ? pool->size() : 1;
  const int64_t group = a.n_heads / a.n_kv_heads;
  // Row blocks: as large as allowed (more reuse of each converted tile), but small enough
  // that every thread gets a unit. Row results do not depend on the blocking.
  int64_t block = std::min<int64_t>(a.n_rows, kMaxUnitRows);
  while (block > 1 && a.n_kv_heads * ((a.n_rows + block - 1) / block) < nt) block = (block + 1) / 2;
  const int64_t n_blocks = (a.n_rows + block - 1) / block;
  const int64_t n_units = a.n_kv_heads * n_blocks;
  auto job = [&](int ti, int n_threads) {
    thread_local std::vector<float> buf;  // per-thread scratch, see carve()
    const AttnScratch s = carve(buf, block, group, a.head_dim);
    for (int64_t u = ti; u < n_units; u += n_threads) {
      const int64_t g = u % a.n_kv_heads, b = u / a.n_kv_heads;
      const int64_t r0 = b * block, r1 = std::min(a.n_rows, r0 + block);
      k.attention_unit(a, g, r0, r1, s);
    }
  };
  if (pool != nullptr && nt > 1) {
    pool->run(job);
  } else {
    job(0, 1);
  }
}

}  // namespace fulgur::kernels
