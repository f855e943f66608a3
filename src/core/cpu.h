// CPU feature detection (CPUID + XGETBV) and the instruction-set level fulgur's kernels use.
#pragma once

#include <string>

namespace fulgur {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
};

// The kernel families fulgur ships, from slowest to fastest.
enum class Isa { kRef = 0, kAvx2 = 1, kAvx512 = 2 };

const CpuFeatures& cpu_features();
// Best level this CPU (and OS) can run.
Isa best_isa();
// True when this CPU can run the given level.
bool isa_supported(Isa isa);
const char* isa_name(Isa isa);
// Parses "ref" / "avx2" / "avx512"; throws fulgur::Error naming the value otherwise.
Isa parse_isa(const std::string& name);
// Number of physical cores (hyper-threads of one core count once).
int physical_core_count();

}  // namespace fulgur
