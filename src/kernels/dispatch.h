// Which kernel family (ref, avx2, avx512) runs. Chosen once, at first use, from CPUID and the
// FULGUR_ISA environment variable (ref|avx2|avx512 forces a path; asking for one this CPU cannot
// run is an error), and logged. Never decided by -march=native: the binary is built for
// baseline x86-64 and only the files under avx2/ and avx512/ use wider instructions. The choice
// is a table of the family's kernels (table.h) that every op calls through.
#pragma once

#include "core/cpu.h"

namespace fulgur::kernels {

Isa active_isa();
// For tests and benchmarks that compare paths: re-points the table; throws if the CPU cannot
// run `isa`.
void set_active_isa(Isa isa);

}  // namespace fulgur::kernels
