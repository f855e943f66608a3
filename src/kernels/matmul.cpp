// matmul dispatch: argument checks, activation quantization into the caller's workspace, the
// split of the output across the pool, and the choice of the ISA family (kernels/dispatch.h).
#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/dispatch.h"
#include "kernels/packed.h"
#include "kernels/quant_act.h"

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
    case DType::kMXFP4:
    case DType::kNVFP4:
      return true;
    default:
      return false;
  }
}

bool uses_act_q8(DType type) {
  return matmul_supports(type) && type != DType::kF32 && type != DType::kF16 &&
         type != DType::kBF16;
}

void check_matmul_args(const WeightView& w, const float* x, int64_t n, int64_t ldx, const float* y,
                       int64_t ldy) {
  FULGUR_CHECK(matmul_supports(w.type), "matmul: weight type ", dtype_name(w.type), " (id ",
               static_cast<uint32_t>(w.type),
               ") is not supported; expected f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, "
               "q3_K, q4_K, q5_K, q6_K, iq4_nl, mxfp4 or nvfp4");
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

void matmul_many(const MatmulOut* outs, int n_outs, const float* x, int64_t n, int64_t ldx,
                 ThreadPool* pool) {
  FULGUR_CHECK(n_outs >= 1 && n_outs <= kMaxMatmulOuts, "matmul_many: ", n_outs,
               " matrices; expected 1 to ", kMaxMatmulOuts);
  const Isa isa = active_isa();
  if (isa == Isa::kRef) {
    for (int k = 0; k < n_outs; ++k) matmul_ref(*outs[k].w, x, n, ldx, outs[k].y, outs[k].ldy, pool);
    return;
  }
  const int64_t cols = outs[0].w->cols;
  bool any_q8 = false;
  for (int k = 0; k < n_outs; ++k) {
    const MatmulOut& o = outs[k];
    check_matmul_args(*o.w, x, n, ldx, o.y, o.ldy);
    FULGUR_CHECK(o.w->cols == cols, "matmul_many: matrix ", k, " has ", o.w->cols,
                 " columns, matrix 0 has ", cols, " (they share the activations)");
    FULGUR_CHECK(o.w->layout == WeightLayout::kRows || isa == Isa::kAvx512,
                 "matmul: packed (kRows16) weights need the avx512 kernels, but the active ISA is ",
                 isa_name(isa));
    any_q8 = any_q8 || uses_act_q8(o.w->type);
  }
  if (n == 0) return;
  if (cols == 0) {
    for (int k = 0; k < n_outs; ++k)
      for (int64_t r = 0; r < n; ++r)
        std::memset(outs[k].y + r * outs[k].ldy, 0, static_cast<size_t>(outs[k].w->rows) * 4);
    return;
  }
  const bool avx512 = isa == Isa::kAvx512;
  const int nt = pool != nullptr ? pool->size() : 1;

  // One task per matrix; they share the activations, quantized once on the calling thread so
  // the op costs one barrier (the job below): quantizing is O(n * cols) against the product's
  // O(n * cols * rows), a few percent of a prefill.
  MatmulTask tasks[kMaxMatmulOuts];
  ActQ8 act;
  const int64_t kp = round_up(cols, kActPad);
  if (any_q8) {
    thread_local ActWorkspace ws;
    act = ws.view(n, kp);
    for (int64_t r = 0; r < n; ++r) {
      const float* xr = x + r * ldx;
      int8_t* q = act.q + r * kp;
      float* d = act.d + r * (kp / 4);
      float* s16 = act.s + r * (kp / 16);
      if (avx512)
        avx512::quantize_act_row(xr, cols, q, d, s16, kp);
      else
        avx2::quantize_act_row(xr, cols, q, d, s16, kp);
    }
  }
  int64_t units[kMaxMatmulOuts + 1] = {0};  // prefix sums of 16-row units per matrix
  // Weight bytes of one unit of each matrix, and their prefix sums: threads split the bytes,
  // not the unit count, so a Q6_K matrix beside Q4_K ones (attn_v in Q4_K_M) does not leave
  // one thread waiting for the other.
  int64_t unit_bytes[kMaxMatmulOuts] = {0}, bytes[kMaxMatmulOuts + 1] = {0};
  int64_t total_rows = 0;
  for (int k = 0; k < n_outs; ++k) {
    const WeightView& w = *outs[k].w;
    tasks[k] = {&w, x, ldx, act, outs[k].y, outs[k].ldy};
    units[k + 1] = units[k] + (w.rows + kPackRows - 1) / kPackRows;
    unit_bytes[k] = std::max<int64_t>(1, static_cast<int64_t>(w.layout == WeightLayout::kRows16
                                                                  ? w.row_stride
                                                                  : w.row_stride * kPackRows));
    bytes[k + 1] = bytes[k] + (units[k + 1] - units[k]) * unit_bytes[k];
    total_rows += w.rows;
  }
  // The first unit at or after the byte offset b (rounded to the nearest unit boundary).
  auto unit_at = [&](int64_t b) {
    int k = 0;
    while (k + 1 < n_outs && bytes[k + 1] <= b) ++k;
    const int64_t in = (b - bytes[k] + unit_bytes[k] / 2) / unit_bytes[k];
    return std::min(units[k + 1], units[k] + in);
  };

  // Runs rows [o0, o1) x activation rows [r0, r1) of matrix k on this thread.
  auto rect = [&](int k, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
    const MatmulTask& t = tasks[k];
    if (t.w->layout == WeightLayout::kRows16) {
      pack_format(t.w->type)->rect_avx512(t, o0, o1, r0, r1);
      return;
    }
    // [kp / 16 + 16] f32 per thread: the group coefficients of one weight row.
    thread_local std::vector<float> scratch;
    const auto need = static_cast<size_t>(kp / 16 + 16);
    if (scratch.size() < need) scratch.resize(need);
    if (avx512)
      avx512::matmul_rect(t, o0, o1, r0, r1, scratch.data());
    else
      avx2::matmul_rect(t, o0, o1, r0, r1, scratch.data());
  };
  // Split the output rows in 16-row units (each thread reads a disjoint slice of the weights:
  // what decode needs; whole units keep packed tiles intact); with fewer output rows than the
  // threads can share, split the activation rows instead.
  const bool split_rows = units[n_outs] >= 2 * nt || total_rows >= n;
  auto job = [&](int ti, int ntt) {
    if (!split_rows) {
      const int64_t r0 = n * ti / ntt, r1 = n * (ti + 1) / ntt;
      if (r0 >= r1) return;
      for (int k = 0; k < n_outs; ++k) rect(k, 0, outs[k].w->rows, r0, r1);
      return;
    }
    const int64_t u0 = ti == 0 ? 0 : unit_at(bytes[n_outs] * ti / ntt);
    const int64_t u1 = ti + 1 == ntt ? units[n_outs] : unit_at(bytes[n_outs] * (ti + 1) / ntt);
    for (int k = 0; k < n_outs; ++k) {
      const int64_t a = std::max(u0, units[k]) - units[k], b = std::min(u1, units[k + 1]) - units[k];
      if (a >= b) continue;
      const int64_t rows = outs[k].w->rows;
      rect(k, a * kPackRows, std::min(rows, b * kPackRows), 0, n);
    }
  };
  if (nt > 1)
    pool->run(job);
  else
    job(0, 1);
}

}  // namespace fulgur::kernels
