#include "kernels/dispatch.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"
#include "core/log.h"

namespace fulgur::kernels {
namespace {

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

std::atomic<Isa>& current() {
  static std::atomic<Isa> isa{choose()};
  return isa;
}

}  // namespace

Isa active_isa() { return current().load(std::memory_order_relaxed); }

void set_active_isa(Isa isa) {
  FULGUR_CHECK(isa_supported(isa), "this CPU cannot run the ", isa_name(isa), " kernels");
  current().store(isa, std::memory_order_relaxed);
}

}  // namespace fulgur::kernels
