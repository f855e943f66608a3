// The main() body of the Google Benchmark programs that register their benchmarks at run time
// (after reading the active ISA): initialize, reject unknown flags, run.
#pragma once

#include <benchmark/benchmark.h>

namespace fulgur::bench {

inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace fulgur::bench
