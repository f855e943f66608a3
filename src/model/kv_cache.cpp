#include "model/kv_cache.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace fulgur {

KvCache::KvCache(const std::vector<int64_t>& n_kv_heads, const std::vector<int64_t>& head_dims,
                 int64_t n_ctx, int32_t window)
    : n_ctx_(n_ctx), window_(window), head_dim_(head_dims), n_kv_heads_(n_kv_heads) {
  FULGUR_CHECK(n_ctx > 0, "context size must be positive, got ", n_ctx);
  FULGUR_CHECK(window >= 0 && n_kv_heads.size() == head_dims.size(), "KV cache: bad window or layer lists");
  // Each array starts on a 64-byte boundary; small contexts get one block of their own size.
  block_cells_ = std::min<int64_t>(kBlockCells, (n_ctx + 31) / 32 * 32);
  const int64_t n_blocks = (n_ctx + block_cells_ - 1) / block_cells_;
  const auto aligned = [](int64_t elems) { return (elems + 31) / 32 * 32; };
  for (size_t l = 0; l < n_kv_heads.size(); ++l) {
    const int64_t elems = aligned(n_kv_heads[l] * block_cells_ * head_dims[l]);
    k_off_.push_back(block_stride_);
    block_stride_ += elems;
    v_off_.push_back(block_stride_);
    block_stride_ += elems;
  }
  const int64_t total = block_stride_ * n_blocks;
  const size_t bytes = static_cast<size_t>(total) * sizeof(uint16_t);
  try {
    mem_ = PageBuffer(bytes);
  } catch (const Error&) {
    fail("the KV cache of a ", n_ctx, "-token context needs ", (bytes >> 20),
         " MiB (f16 K and V), more than this machine can map: lower the context size (-c)");
  }
  cell_pos_.assign(static_cast<size_t>(n_ctx), -1);
  cell_seq_.assign(static_cast<size_t>(n_ctx), 0);
}

bool KvCache::holds(int64_t layer, int64_t n_kv_heads, int64_t head_dim) const {
  return layer >= 0 && layer < static_cast<int64_t>(n_kv_heads_.size()) && n_kv_heads > 0 &&
         n_kv_heads_[static_cast<size_t>(layer)] == n_kv_heads && head_dim_[static_cast<size_t>(layer)] == head_dim;
}

void KvCache::claim(int64_t n, const int32_t* pos, const int32_t* seq, int32_t* cells) {
  FULGUR_CHECK(used_ + n <= n_ctx_, "context is full: the batch needs ", n, " KV cells but only ",
               n_ctx_ - used_, " of ", n_ctx_, " are free (raise the context size with -c)");
  int64_t c = search_from_;
  for (int64_t i = 0; i < n; ++i) {
    while (cell_pos_[c] >= 0) c = (c + 1) % n_ctx_;
    cell_pos_[c] = pos[i];
    cell_seq_[c] = uint64_t{1} << seq[i];
    cells[i] = static_cast<int32_t>(c);
  }
  used_ += n;
  search_from_ = (c + 1) % n_ctx_;
}

void KvCache::seq_rm(int seq, int32_t p0, int32_t p1) {
  const uint64_t mask = seq < 0 ? ~uint64_t{0} : uint64_t{1} << seq;
  if (p0 <= 0 && p1 < 0) {  // the whole sequence: nothing of it is forgotten any more
    for (int q = 0; q < kMaxSequences; ++q) {
      if ((mask >> q) & 1) forgotten_[q] = 0;
    }
  }
  for (int64_t c = 0; c < n_ctx_; ++c) {
    if (cell_pos_[c] < 0 || (cell_seq_[c] & mask) == 0) continue;
    if (cell_pos_[c] < p0 || (p1 >= 0 && cell_pos_[c] >= p1)) continue;
    cell_seq_[c] &= ~mask;
    if (cell_seq_[c] == 0) {
      cell_pos_[c] = -1;
      --used_;
      search_from_ = std::min<int64_t>(search_from_, c);
    }
  }
}

void KvCache::seq_cp(int src, int dst, int32_t p0, int32_t p1) {
  forgotten_[dst] = std::max(forgotten_[dst], forgotten_[src]);
  for (int64_t c = 0; c < n_ctx_; ++c) {
    if (cell_pos_[c] < 0 || ((cell_seq_[c] >> src) & 1) == 0) continue;
    if (cell_pos_[c] < p0 || (p1 >= 0 && cell_pos_[c] >= p1)) continue;
    cell_seq_[c] |= uint64_t{1} << dst;
  }
}

void KvCache::seq_keep(int seq) {
  for (int q = 0; q < kMaxSequences; ++q) {
    if (q != seq) forgotten_[q] = 0;
  }
  for (int64_t c = 0; c < n_ctx_; ++c) {
    if (cell_pos_[c] < 0) continue;
    cell_seq_[c] &= uint64_t{1} << seq;
    if (cell_seq_[c] == 0) {
      cell_pos_[c] = -1;
      --used_;
    }
  }
  search_from_ = 0;
}

int32_t KvCache::seq_pos_max(int seq) const {
  int32_t best = -1;
  for (int64_t c = 0; c < n_ctx_; ++c) {
    if (cell_pos_[c] >= 0 && ((cell_seq_[c] >> seq) & 1)) best = std::max(best, cell_pos_[c]);
  }
  return best;
}

void KvCache::slide(int seq, int32_t first_pos) {
  if (window_ == 0) return;
  // A row at first_pos sees positions > first_pos - window; forget below, in whole tiles.
  const int32_t keep_from = std::max(0, first_pos - window_ + 1) / kernels::kAttnTileCells *
                            kernels::kAttnTileCells;
  if (keep_from <= forgotten_[seq]) return;
  const uint64_t bit = uint64_t{1} << seq;
  for (int64_t c = 0; c < n_ctx_; ++c) {
    if (cell_pos_[c] < 0 || cell_pos_[c] >= keep_from || (cell_seq_[c] & bit) == 0) continue;
    cell_seq_[c] &= ~bit;
    if (cell_seq_[c] == 0) {
      cell_pos_[c] = -1;
      --used_;
      search_from_ = std::min<int64_t>(search_from_, c);
    }
  }
  forgotten_[seq] = keep_from;
}

bool KvCache::can_rm(int seq, int32_t p0) const {
  return window_ == 0 || p0 <= 0 || forgotten_[seq] <= std::max(0, p0 - window_ + 1);
}

void KvCache::clear() {
  std::fill(std::begin(forgotten_), std::end(forgotten_), 0);
  std::fill(cell_pos_.begin(), cell_pos_.end(), -1);
  std::fill(cell_seq_.begin(), cell_seq_.end(), 0);
  used_ = 0;
  search_from_ = 0;
}

template <class F>
void KvCache::for_each_kv_layer(F&& f) const {
  for (size_t l = 0; l < head_dim_.size(); ++l) {
    if (n_kv_heads_[l] > 0) f(static_cast<int64_t>(l), k_off_[l], v_off_[l]);
  }
}

KvCache::SeqCopy KvCache::copy_seq(int seq) const {
  SeqCopy c;
  c.forgotten = forgotten_[seq];
  std::vector<int32_t> cells;
  std::vector<uint64_t> seqs;
  visible_cells(uint64_t{1} << seq, cells, c.pos, seqs);
  c.kv = PageBuffer(static_cast<size_t>(cell_elems()) * cells.size() * sizeof(uint16_t), /*populate=*/true);
  auto* dst = reinterpret_cast<uint16_t*>(c.kv.data());
  for_each_kv_layer([&](int64_t l, int64_t k_off, int64_t v_off) {
    const size_t hd = static_cast<size_t>(head_dim_[l]);
    for (int64_t off : {k_off, v_off}) {
      for (int64_t h = 0; h < n_kv_heads_[l]; ++h) {
        for (int32_t cell : cells) {
          const uint16_t* src = base() + off + row(l, h, cell);
          dst = std::copy(src, src + hd, dst);
        }
      }
    }
  });
  return c;
}

int64_t KvCache::cell_elems() const {
  int64_t n = 0;
  for_each_kv_layer([&](int64_t l, int64_t, int64_t) { n += 2 * n_kv_heads_[l] * head_dim_[l]; });
  return n;
}

bool KvCache::fits(const SeqCopy& copy) const {
  return static_cast<int64_t>(copy.kv.size()) ==
         cell_elems() * static_cast<int64_t>(copy.pos.size() * sizeof(uint16_t));
}

int64_t KvCache::cells_available_to(int seq) const {
  const uint64_t bit = uint64_t{1} << seq;
  int64_t only_seq = 0;
  for (int64_t c = 0; c < n_ctx_; ++c) only_seq += cell_pos_[c] >= 0 && cell_seq_[c] == bit;
  return n_ctx_ - used_ + only_seq;
}

void KvCache::paste_seq(int seq, const SeqCopy& copy) {
  const int64_t n = static_cast<int64_t>(copy.pos.size());
  FULGUR_CHECK(fits(copy), "a copied KV memory of another model's layout was given to this cache");
  FULGUR_CHECK(n <= cells_available_to(seq), "context is full: restoring a cached prompt of ", n,
               " tokens needs ", n, " KV cells but only ", cells_available_to(seq), " of ", n_ctx_,
               " are available (raise the context size with -c)");
  seq_rm(seq, 0, -1);
  std::vector<int32_t> cells(static_cast<size_t>(n)), seqs(static_cast<size_t>(n), seq);
  claim(n, copy.pos.data(), seqs.data(), cells.data());
  forgotten_[seq] = copy.forgotten;
  const auto* src = reinterpret_cast<const uint16_t*>(copy.kv.data());
  for_each_kv_layer([&](int64_t l, int64_t k_off, int64_t v_off) {
    const size_t hd = static_cast<size_t>(head_dim_[l]);
    for (int64_t off : {k_off, v_off}) {
      for (int64_t h = 0; h < n_kv_heads_[l]; ++h) {
        for (int32_t cell : cells) {
          std::copy(src, src + hd, base() + off + row(l, h, cell));
          src += hd;
        }
      }
    }
  });
}

void KvCache::visible_cells(uint64_t seq_mask, std::vector<int32_t>& cells,
                            std::vector<int32_t>& pos, std::vector<uint64_t>& seqs) const {
  cells.clear();
  for (int64_t c = 0; c < n_ctx_; ++c) {
    if (cell_pos_[c] >= 0 && (cell_seq_[c] & seq_mask) != 0) cells.push_back(static_cast<int32_t>(c));
  }
  std::sort(cells.begin(), cells.end(), [&](int32_t a, int32_t b) {
    return cell_pos_[a] != cell_pos_[b] ? cell_pos_[a] < cell_pos_[b] : a < b;
  });
  pos.resize(cells.size());
  seqs.resize(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    pos[i] = cell_pos_[cells[i]];
    seqs[i] = cell_seq_[cells[i]];
  }
}

}  // namespace fulgur
