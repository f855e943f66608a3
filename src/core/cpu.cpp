#include "core/cpu.h"

#include <cpuid.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "core/error.h"

namespace fulgur {
namespace {

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  if (!osxsave) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;     // SSE + AVX state saved by the OS
  const bool zmm_os = (xcr0 & 0xE6) == 0xE6;   // plus opmask and upper ZMM state
  f.fma = ((c >> 12) & 1) && ymm_os;
  f.f16c = ((c >> 29) & 1) && ymm_os;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ((b >> 5) & 1) && ymm_os;
  f.avx512f = ((b >> 16) & 1) && zmm_os;
  f.avx512dq = ((b >> 17) & 1) && zmm_os;
  f.avx512bw = ((b >> 30) & 1) && zmm_os;
  f.avx512vl = ((b >> 31) & 1) && zmm_os;
  f.avx512vnni = ((c >> 11) & 1) && zmm_os;
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kRef:
      return true;
    case Isa::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case Isa::kAvx512:
      return isa_supported(Isa::kAvx2) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq &&
             f.avx512vnni;
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kRef;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kRef:
      return "ref";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

Isa parse_isa(const std::string& name) {
  if (name == "ref") return Isa::kRef;
  if (name == "avx2") return Isa::kAvx2;
  if (name == "avx512") return Isa::kAvx512;
  fail("unknown ISA '", name, "' (expected ref, avx2 or avx512)");
}

int physical_core_count() {
  // Count distinct (physical id, core id) pairs; fall back to the logical count.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (line.rfind("physical id", 0) == 0) physical = value;
    if (line.rfind("core id", 0) == 0) cores.emplace(physical, value);
  }
  const int logical = static_cast<int>(std::thread::hardware_concurrency());
  if (cores.empty()) return logical > 0 ? logical : 1;
  return static_cast<int>(cores.size());
}

}  // namespace fulgur
