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

// Constant-initialized (function addresses only), so they exist before any static constructor
// that might call a kernel.
constinit const KernelTable kRefTable{
    .isa = Isa::kRef,
    .rms_norm = rms_norm_ref,
    .l2_norm = l2_norm_ref,
    .rms_norm_gated = rms_norm_gated_ref,
    .rope_apply = rope_apply_ref,
    .softmax = softmax_ref,
    .silu = silu_ref,
    .gelu = gelu_ref,
    .sigmoid = sigmoid_ref,
    .softplus = softplus_ref,
    .relu_sq = relu_sq_ref,
    .swiglu = swiglu_ref,
    .geglu = geglu_ref,
    .add = add_ref,
    .mul = mul_ref,
    .vec_exp = vec_exp_scalar,
    .to_f16 = to_f16_ref,
};

// The same table for each SIMD family: its namespace's entries (simd/entries.inc).
#define FULGUR_SIMD_TABLE(name, ns, isa_value)                    \
  constinit const KernelTable name{                               \
      .isa = isa_value,                                           \
      .rms_norm = ns::rms_norm,                                   \
      .l2_norm = ns::l2_norm,                                     \
      .rms_norm_gated = ns::rms_norm_gated,                       \
      .rope_apply = ns::rope_apply,                               \
      .softmax = ns::softmax,                                     \
      .silu = ns::silu,                                           \
      .gelu = ns::gelu,                                           \
      .sigmoid = ns::sigmoid,                                     \
      .softplus = softplus_scalar,                                \
      .relu_sq = ns::relu_sq,                                     \
      .swiglu = ns::swiglu,                                       \
      .geglu = ns::geglu,                                         \
      .add = ns::add,                                             \
      .mul = ns::mul,                                             \
      .vec_exp = ns::vec_exp,                                     \
      .to_f16 = ns::to_f16,                                       \
      .get_row = ns::get_row,                                     \
      .attention_unit = ns::attention_unit,                       \
      .conv1d_causal = ns::conv1d_causal,                         \
      .ssm_scan_step = ns::ssm_scan_step,                         \
      .gated_delta_step = ns::gated_delta_step,                   \
      .gated_delta_chunk = ns::gated_delta_chunk,                 \
      .gated_delta_chunk_scratch = ns::gated_delta_chunk_scratch, \
      .quantize_act_row = ns::quantize_act_row,                   \
      .matmul_rect = ns::matmul_rect,                             \
  };
FULGUR_SIMD_TABLE(kAvx2Table, avx2, Isa::kAvx2)
FULGUR_SIMD_TABLE(kAvx512Table, avx512, Isa::kAvx512)
#undef FULGUR_SIMD_TABLE

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
