#!/usr/bin/env bash
# Configures and builds fulgur into build/ (Release): everything (the binary, its tests and
# benchmarks), or with --binary only the `fulgur` binary (what the demo needs; no test packages).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--binary" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFULGUR_TESTS=OFF -DFULGUR_BENCH=OFF >/dev/null
  cmake --build build --target fulgur
else
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFULGUR_TESTS=ON -DFULGUR_BENCH=ON >/dev/null
  cmake --build build
fi
