// Internal to kernels/: the kernels of one family (ref, avx2, avx512) as a table of function
// pointers, picked once at first use (kernels/dispatch.h's choice) and re-pointed by
// set_active_isa, as ggml and gemma.cpp pick theirs: an op then pays one load and one indirect
// call, and no op switches on the ISA.
// Included only by baseline translation units (the dispatchers): kernel_table() is inline code,
// which must not also be compiled under avx2/ or avx512/ flags (ODR, see simd/entries.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/cpu.h"
#include "kernels/simd/entries.h"

namespace fulgur::kernels {

struct KernelTable {
  Isa isa;
  // ops.h, arguments already checked; the ref table holds the X_ref twins.
  void (*rms_norm)(const float* x, const float* weight, float eps, float* y, int64_t n_rows,
                   int64_t dim, int64_t x_stride, int64_t y_stride);
  void (*l2_norm)(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim,
                  int64_t row_stride, float eps);
  void (*rms_norm_gated)(const float* x, const float* z, const float* weight, float eps,
                         GateOrder order, float* y, int64_t n_rows, int64_t dim,
                         int64_t n_groups, int64_t x_stride, int64_t z_stride, int64_t y_stride);
  void (*rope_apply)(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim,
                     int64_t row_stride, int64_t n_rot, RopeMode mode, const float* cs);
  void (*softmax)(float* x, int64_t n_rows, int64_t n, int64_t row_stride, float scale);
  void (*silu)(const float* x, float* out, int64_t n);
  void (*gelu)(const float* x, float* out, int64_t n);
  void (*sigmoid)(const float* x, float* out, int64_t n);
  void (*relu_sq)(const float* x, float* out, int64_t n);
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  void (*geglu)(const float* gate, const float* up, float* out, int64_t n);
  void (*add)(const float* a, const float* b, float* out, int64_t n);
  void (*mul)(const float* a, const float* b, float* out, int64_t n);
  void (*to_f16)(const float* x, uint16_t* y, int64_t n);

  // The SIMD families' parts of the ops whose ref twin is one whole function (get_rows_ref,
  // attention_ref, conv1d_causal_ref, ssm_scan_ref, gated_delta_ref, gated_delta_chunked_ref,
  // matmul_ref): simd/entries.inc's contracts. nullptr in the ref table; those ops test
  // `isa == Isa::kRef` once and run the whole reference.
  bool (*get_row)(DType type, const void* src, float* dst, int64_t cols) = nullptr;
  void (*attention_unit)(const AttentionArgs& a, int64_t kv_head, int64_t row0, int64_t row1,
                         const AttnScratch& scratch) = nullptr;
  void (*conv1d_causal)(const Conv1dArgs& a, const float* wt) = nullptr;
  void (*ssm_scan_step)(const SsmScanArgs& a, int64_t h, int64_t t, float* state,
                        float* snap) = nullptr;
  void (*gated_delta_step)(const GatedDeltaArgs& a, int64_t hv, int64_t t, float* state,
                           float* snap) = nullptr;
  void (*gated_delta_chunk)(const GatedDeltaArgs& a, int64_t hv, int64_t t0, int64_t len,
                            float* scratch) = nullptr;
  int64_t (*gated_delta_chunk_scratch)(int64_t k_dim, int64_t v_dim) = nullptr;
  void (*quantize_act_row)(const float* x, int64_t cols, int8_t* q, float* d,
                           float* s) = nullptr;
  void (*matmul_rect)(const MatmulTask& t, int64_t o0, int64_t o1, int64_t r0, int64_t r1,
                      float* scratch) = nullptr;

  // ops.h's two that the families do not name as X / X_ref: the ref family's exp is std::exp
  // (ops.h has no vec_exp_ref), and the SIMD families share one scalar softplus.
  void (*softplus)(const float* x, float* out, int64_t n);
  void (*vec_exp)(const float* x, float* y, int64_t n);
};

namespace detail {
// The active table; null until the first kernel_table() or set_active_isa (dispatch.cpp).
extern std::atomic<const KernelTable*> active_table;
// Picks the table (CPUID, FULGUR_ISA) on first use and logs the choice.
const KernelTable& first_table();
}  // namespace detail

// The active family's kernels. Load it once per op, as the ops read active_isa() once before.
inline const KernelTable& kernel_table() {
  const KernelTable* t = detail::active_table.load(std::memory_order_relaxed);
  return t != nullptr ? *t : detail::first_table();
}

}  // namespace fulgur::kernels
