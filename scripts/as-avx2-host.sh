#!/usr/bin/env bash
# Runs a command as an AVX2-only host (an AMD Zen 1, say) would run it, on a CPU with AVX-512:
# fulgur on its AVX2 kernels (FULGUR_ISA=avx2: their bits are the same on any CPU), and
# llama.cpp on the build node-llama-cpp would load there (its AVX-512 builds hidden, so it picks
# `haswell`). The oracle tests' seeds and bounds are checked this way, since which near-ties
# flip depends on both engines' roundings. The hidden builds come back when the command ends,
# however it ends.
#
# usage: scripts/as-avx2-host.sh COMMAND...   e.g. scripts/as-avx2-host.sh build/test_llama
set -euo pipefail
bins="$(cd "$(dirname "$0")/.." && pwd)/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
[[ -d "$bins" ]] || { echo "as-avx2-host.sh: $bins not found (run npm ci)" >&2; exit 1; }
[[ $# -gt 0 ]] || { echo "usage: scripts/as-avx2-host.sh COMMAND..." >&2; exit 2; }
hidden="$bins/hidden-by-as-avx2-host"
[[ ! -e "$hidden" ]] || { echo "as-avx2-host.sh: $hidden exists (another run, or one killed hard): move its files back first" >&2; exit 1; }
mkdir "$hidden"
restore() { mv "$hidden"/*.so "$bins"/ 2>/dev/null || true; rmdir "$hidden"; }
trap restore EXIT
# The builds that need AVX-512 or AVX-VNNI (ggml's x86 CPU variants).
for v in zen4 skylakex cannonlake cascadelake icelake cooperlake sapphirerapids alderlake; do
  if [[ -e "$bins/libggml-cpu-$v.so" ]]; then mv "$bins/libggml-cpu-$v.so" "$hidden/"; fi
done
FULGUR_ISA=avx2 "$@"
