// Dispatch of the recurrent kernels: argument validation, the split of heads over the pool,
// the routing of each token's state to its snapshot, and the conv state bookkeeping (plain
// copies, shared by every ISA). The arithmetic is in ref/recurrent.cpp and, for the SIMD
// paths, simd/recurrent.inc.
#include "kernels/recurrent.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/table.h"

namespace fulgur::kernels {
namespace {

void copy_floats(float* dst, const float* src, int64_t n) {
  if (dst != src) std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// Runs fn(h) for h in [0, n_heads), split over the pool in contiguous ranges.
template <class Fn>
void for_each_head(ThreadPool* pool, int64_t n_heads, Fn&& fn) {
  if (pool == nullptr || pool->size() <= 1 || n_heads <= 1) {
    for (int64_t h = 0; h < n_heads; ++h) fn(h);
    return;
  }
  pool->parallel_for(n_heads, [&](int64_t h0, int64_t h1, int) {
    for (int64_t h = h0; h < h1; ++h) fn(h);
  });
}

// The SIMD per-token kernels: every head through the n tokens in place (heads over the pool),
// the step also writing the head's state after token t into snap[t] when that is wanted.
template <class Args, class Step>
void step_heads(const Args& a, ThreadPool* pool, int64_t n_heads, int64_t head_size, Step step) {
  for_each_head(pool, n_heads, [&](int64_t h) {
    const int64_t offset = h * head_size;
    for (int64_t t = 0; t < a.n; ++t) {
      float* plane = a.snap != nullptr ? a.snap[t] : nullptr;
      step(a, h, t, a.state + offset,
           plane != nullptr && plane != a.state ? plane + offset : nullptr);
    }
  });
}

void check_rows(const char* op, const char* name, const float* p, int64_t stride, int64_t width,
                int64_t n) {
  FULGUR_CHECK(n == 0 || p != nullptr, op, ": ", name, " must be given");
  FULGUR_CHECK(n <= 1 || stride >= width, op, ": ", name, "_stride = ", stride,
               " is shorter than its row of ", width, " floats");
}

void check_snap(const char* op, float* const* snap, int64_t n, const float* state, int64_t size) {
  if (snap == nullptr) return;
  for (int64_t t = 0; t < n; ++t) {
    // A snapshot may be the state itself (then it is simply not kept), never a partial overlap.
    const float* s = snap[t];
    FULGUR_CHECK(s == nullptr || s == state || s + size <= state || state + size <= s, op,
                 ": snap[", t, "] overlaps the state without being it");
  }
}

void validate(const Conv1dArgs& a) {
  FULGUR_CHECK(a.n >= 0 && a.channels > 0 && a.kernel >= 1, "conv1d_causal: n = ", a.n,
               ", channels = ", a.channels, ", kernel = ", a.kernel,
               ", expected n >= 0, channels > 0, kernel >= 1");
  FULGUR_CHECK(a.w != nullptr, "conv1d_causal: w must be given");
  FULGUR_CHECK(a.kernel == 1 || a.state != nullptr,
               "conv1d_causal: state must be given for kernel ", a.kernel);
  check_rows("conv1d_causal", "x", a.x, a.x_stride, a.channels, a.n);
  check_rows("conv1d_causal", "y", a.y, a.y_stride, a.channels, a.n);
  check_snap("conv1d_causal", a.snap, a.n, a.state, (a.kernel - 1) * a.channels);
}

void validate(const SsmScanArgs& a) {
  FULGUR_CHECK(a.n >= 0 && a.n_heads > 0 && a.head_dim > 0 && a.d_state > 0 && a.n_groups > 0,
               "ssm_scan: n = ", a.n, ", n_heads = ", a.n_heads, ", head_dim = ", a.head_dim,
               ", n_groups = ", a.n_groups, ", d_state = ", a.d_state, ", expected positive sizes");
  FULGUR_CHECK(a.n_heads % a.n_groups == 0, "ssm_scan: n_heads = ", a.n_heads,
               " is not a multiple of n_groups = ", a.n_groups);
  FULGUR_CHECK(a.a != nullptr && a.state != nullptr, "ssm_scan: a and state must be given");
  check_rows("ssm_scan", "x", a.x, a.x_stride, a.n_heads * a.head_dim, a.n);
  check_rows("ssm_scan", "dt", a.dt, a.dt_stride, a.n_heads, a.n);
  check_rows("ssm_scan", "b", a.b, a.b_stride, a.n_groups * a.d_state, a.n);
  check_rows("ssm_scan", "c", a.c, a.c_stride, a.n_groups * a.d_state, a.n);
  check_rows("ssm_scan", "y", a.y, a.y_stride, a.n_heads * a.head_dim, a.n);
  check_snap("ssm_scan", a.snap, a.n, a.state, a.n_heads * a.head_dim * a.d_state);
}

void validate(const GatedDeltaArgs& a, const char* op) {
  FULGUR_CHECK(a.n >= 0 && a.n_k_heads > 0 && a.n_v_heads > 0 && a.k_dim > 0 && a.v_dim > 0, op,
               ": n = ", a.n, ", n_k_heads = ", a.n_k_heads, ", n_v_heads = ", a.n_v_heads,
               ", k_dim = ", a.k_dim, ", v_dim = ", a.v_dim, ", expected positive sizes");
  FULGUR_CHECK(a.n_v_heads % a.n_k_heads == 0, op, ": n_v_heads = ", a.n_v_heads,
               " is not a multiple of n_k_heads = ", a.n_k_heads);
  FULGUR_CHECK(a.k_dim <= kGdnMaxKeyDim, op, ": k_dim = ", a.k_dim, " exceeds ", kGdnMaxKeyDim);
  FULGUR_CHECK(a.head_map == GdnHeadMap::kTiled || a.head_map == GdnHeadMap::kGrouped, op,
               ": unknown head_map ", static_cast<int>(a.head_map));
  FULGUR_CHECK(a.state != nullptr, op, ": state must be given");
  check_rows(op, "q", a.q, a.q_stride, a.n_k_heads * a.k_dim, a.n);
  check_rows(op, "k", a.k, a.k_stride, a.n_k_heads * a.k_dim, a.n);
  check_rows(op, "v", a.v, a.v_stride, a.n_v_heads * a.v_dim, a.n);
  check_rows(op, "g", a.g, a.g_stride, a.n_v_heads, a.n);
  check_rows(op, "beta", a.beta, a.beta_stride, a.n_v_heads, a.n);
  check_rows(op, "out", a.out, a.out_stride, a.n_v_heads * a.v_dim, a.n);
  check_snap(op, a.snap, a.n, a.state, a.n_v_heads * a.v_dim * a.k_dim);
}

}  // namespace

void conv1d_causal(const Conv1dArgs& a) {
  validate(a);
  const KernelTable& k = kernel_table();
  if (k.isa == Isa::kRef) {
    conv1d_causal_ref(a);
    return;
  }
  // Tap-major weights, so each tap is one vector load per channel block. [K][C]
  const float* wt = a.w;
  if (!a.w_tap_major) {
    thread_local std::vector<float> buf;  // grown once per thread, then reused
    buf.resize(static_cast<size_t>(a.kernel * a.channels));
    conv1d_tap_major(a.w, a.channels, a.kernel, buf.data());
    wt = buf.data();
  }
  k.conv1d_causal(a, wt);
  // The state after token t holds inputs t−(K−2) .. t: row r is input t−(K−2)+r, from the old
  // state while that index is negative. Snapshots first (they read the old state), then the
  // state itself in place: row r reads old row t+1+r > r, so a forward pass never overwrites a
  // row it still needs.
  const int64_t hist = a.kernel - 1, c_n = a.channels;
  auto state_after = [&](int64_t t, float* dst) {
    for (int64_t r = 0; r < hist; ++r) {
      const int64_t u = t - (hist - 1) + r;  // input index; < 0: old state row u + hist
      copy_floats(dst + r * c_n, u < 0 ? a.state + (u + hist) * c_n : a.x + u * a.x_stride, c_n);
    }
  };
  if (a.snap != nullptr) {
    for (int64_t t = 0; t < a.n; ++t)
      if (a.snap[t] != nullptr && a.snap[t] != a.state) state_after(t, a.snap[t]);
  }
  if (a.n > 0) state_after(a.n - 1, a.state);
}

void conv1d_tap_major(const float* w, int64_t channels, int64_t kernel, float* wt) {
  for (int64_t j = 0; j < kernel; ++j)
    for (int64_t c = 0; c < channels; ++c) wt[j * channels + c] = w[c * kernel + j];
}

void ssm_scan(const SsmScanArgs& a, ThreadPool* pool) {
  validate(a);
  const int64_t size = a.head_dim * a.d_state;
  const KernelTable& k = kernel_table();
  if (k.isa == Isa::kRef) {
    ssm_scan_ref(a);
    return;
  }
  step_heads(a, pool, a.n_heads, size, k.ssm_scan_step);
}

void gated_delta(const GatedDeltaArgs& a, ThreadPool* pool) {
  validate(a, "gated_delta");
  const int64_t size = a.v_dim * a.k_dim;
  const KernelTable& k = kernel_table();
  if (k.isa == Isa::kRef) {
    gated_delta_ref(a);
    return;
  }
  step_heads(a, pool, a.n_v_heads, size, k.gated_delta_step);
}

void gated_delta_chunked(const GatedDeltaArgs& a, ThreadPool* pool) {
  validate(a, "gated_delta_chunked");
  FULGUR_CHECK(a.snap == nullptr, "gated_delta_chunked: keeps no snapshots (snap must be null)");
  FULGUR_CHECK(a.pos0 >= 0, "gated_delta_chunked: pos0 = ", a.pos0, ", expected >= 0");
  const KernelTable& k = kernel_table();
  if (k.isa == Isa::kRef) {
    gated_delta_chunked_ref(a);
    return;
  }
  const int64_t need = k.gated_delta_chunk_scratch(a.k_dim, a.v_dim);
  for_each_head(pool, a.n_v_heads, [&](int64_t hv) {
    thread_local std::vector<float> scratch;  // grown once per thread, then reused
    if (scratch.size() < static_cast<size_t>(need)) scratch.resize(static_cast<size_t>(need));
    for (int64_t t0 = 0; t0 < a.n;) {
      const int64_t len = std::min(a.n - t0, kGdnChunk - (a.pos0 + t0) % kGdnChunk);
      k.gated_delta_chunk(a, hv, t0, len, scratch.data());
      t0 += len;
    }
  });
}

}  // namespace fulgur::kernels
