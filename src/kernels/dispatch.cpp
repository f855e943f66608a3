// The kernel tables of table.h, one per family, and the choice of the active one.
#include "kernels/dispatch.h"

#include <atomic>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/log.h"
#include "kernels/table.h"

namespace fulgur::kernels {
namespace {

// ops.h has no vec_exp_ref: the ref family's exp is the library's, one value at a time.
void vec_exp_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

// The SIMD families' softplus: one value per head and token, so no vector log is worth having.
void softplus_scalar(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 20.0f ? x[i] : std::log1p(std::exp(x[i]));
}

// The entries every family names alike, in KernelTable's order: `op` for the ops.h functions
// the ref family has as X_ref, `part` for the SIMD families' parts (none in the ref family).
#define FULGUR_NAMED_ENTRIES(op, part)                                                          \
  op(rms_norm) op(l2_norm) op(rms_norm_gated) op(rope_apply) op(softmax) op(silu) op(gelu)      \
  op(sigmoid) op(relu_sq) op(swiglu) op(geglu) op(add) op(mul) op(to_f16)                       \
  part(get_row) part(attention_unit) part(conv1d_causal) part(ssm_scan_step)                    \
  part(gated_delta_step) part(gated_delta_chunk) part(gated_delta_chunk_scratch)                \
  part(quantize_act_row) part(matmul_rect)
#define FULGUR_REF_ENTRY(x) .x = x##_ref,
#define FULGUR_NO_ENTRY(x)
#define FULGUR_AVX2_ENTRY(x) .x = avx2::x,
#define FULGUR_AVX512_ENTRY(x) .x = avx512::x,

// Constant-initialized (function addresses only), so they exist before any static constructor
// that might call a kernel.
constinit const KernelTable kRefTable{
    .isa = Isa::kRef,
    FULGUR_NAMED_ENTRIES(FULGUR_REF_ENTRY, FULGUR_NO_ENTRY)
    .softplus = softplus_ref,
    .vec_exp = vec_exp_scalar,
};
constinit const KernelTable kAvx2Table{
    .isa = Isa::kAvx2,
    FULGUR_NAMED_ENTRIES(FULGUR_AVX2_ENTRY, FULGUR_AVX2_ENTRY)
    .softplus = softplus_scalar,
    .vec_exp = avx2::vec_exp,
};
constinit const KernelTable kAvx512Table{
    .isa = Isa::kAvx512,
    FULGUR_NAMED_ENTRIES(FULGUR_AVX512_ENTRY, FULGUR_AVX512_ENTRY)
    .softplus = softplus_scalar,
    .vec_exp = avx512::vec_exp,
};

#undef FULGUR_NAMED_ENTRIES
#undef FULGUR_REF_ENTRY
#undef FULGUR_NO_ENTRY
#undef FULGUR_AVX2_ENTRY
#undef FULGUR_AVX512_ENTRY

const KernelTable& table_of(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return kAvx512Table;
    case Isa::kAvx2: return kAvx2Table;
    case Isa::kRef: break;
  }
  return kRefTable;
}

Isa choose() {
  const char* forced = std::getenv("FULGUR_ISA");
  Isa isa = best_isa();
  if (forced != nullptr && *forced != '\0') {
    isa = parse_isa(forced);
    FULGUR_CHECK(isa_supported(isa), "FULGUR_ISA=", forced, " but this CPU cannot run it (best is ",
                 isa_name(best_isa()), ")");
  }
  log_info("kernels: ", isa_name(isa), forced != nullptr && *forced != '\0' ? " (forced by FULGUR_ISA)" : " (by CPUID)");
  return isa;
}

}  // namespace

namespace detail {

std::atomic<const KernelTable*> active_table{nullptr};

const KernelTable& first_table() {
  // The static's guard makes the choice (and its log line) happen once; a set_active_isa that
  // came first keeps its table.
  static const KernelTable* const chosen = &table_of(choose());
  const KernelTable* expected = nullptr;
  active_table.compare_exchange_strong(expected, chosen, std::memory_order_relaxed);
  return *active_table.load(std::memory_order_relaxed);
}

}  // namespace detail

Isa active_isa() { return kernel_table().isa; }

void set_active_isa(Isa isa) {
  FULGUR_CHECK(isa_supported(isa), "this CPU cannot run the ", isa_name(isa), " kernels");
  detail::first_table();  // FULGUR_ISA is still checked and the start-up choice logged
  detail::active_table.store(&table_of(isa), std::memory_order_relaxed);
}

}  // namespace fulgur::kernels
