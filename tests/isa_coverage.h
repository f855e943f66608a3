// Kernel tests loop over the instruction sets this CPU can run. Those it cannot (AVX-512 needs
// F, BW, VL, DQ and VNNI; the 16-row packed weight layouts exist only for AVX-512) are
// not tested here, and a test binary must say so instead of passing as if they were:
// runnable() logs the first time it leaves an ISA out, and each binary has a test per ISA
// (IsaCoverage.*, through expect_runnable_or_skip()) that is skipped, naming the missing CPU
// features, when the ISA cannot run.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "kernels/dispatch.h"

namespace fulgur::testing_support {

// The CPU features `isa` needs that this CPU lacks ("" when it can run isa).
inline std::string missing_features(Isa isa) {
  const CpuFeatures& f = cpu_features();
  std::string out;
  const auto need = [&out](bool have, const char* name) {
    if (!have) out += (out.empty() ? "" : ", ") + std::string(name);
  };
  if (isa == Isa::kAvx2 || isa == Isa::kAvx512) {
    need(f.avx2, "avx2");
    need(f.fma, "fma");
    need(f.f16c, "f16c");
  }
  if (isa == Isa::kAvx512) {
    need(f.avx512f, "avx512f");
    need(f.avx512bw, "avx512bw");
    need(f.avx512vl, "avx512vl");
    need(f.avx512dq, "avx512dq");
    need(f.avx512vnni, "avx512_vnni");
  }
  if (out.empty() && !isa_supported(isa)) out = "(the operating system does not enable its registers)";
  return out;
}

// The ISAs of `candidates` this CPU can run. Each one left out is logged once per process.
inline std::vector<Isa> runnable(std::initializer_list<Isa> candidates, const char* what) {
  static std::array<std::atomic<bool>, 3> logged{};
  std::vector<Isa> out;
  for (Isa isa : candidates) {
    if (isa_supported(isa)) {
      out.push_back(isa);
    } else if (!logged[static_cast<size_t>(isa)].exchange(true)) {
      std::fprintf(stderr, "[  SKIPPED ] %s: not tested on this CPU, which lacks %s\n", what,
                   missing_features(isa).c_str());
    }
  }
  return out;
}

// The body of a test per ISA: skipped, naming the missing features, when this CPU cannot run
// `isa` (every case of that ISA in the binary then went untested: `what`); otherwise the
// dispatcher must switch to it and back.
inline void expect_runnable_or_skip(Isa isa, const std::string& what) {
  const std::string missing = missing_features(isa);
  if (!missing.empty()) GTEST_SKIP() << "this CPU lacks " << missing << ": " << what << " not tested";
  const Isa saved = kernels::active_isa();
  kernels::set_active_isa(isa);
  EXPECT_EQ(kernels::active_isa(), isa);
  kernels::set_active_isa(saved);
}

}  // namespace fulgur::testing_support
