#!/usr/bin/env bash
# What speculation costs where it cannot pay, counted in instructions rather than seconds: on a
# shared 2-vCPU VM the same plain decode of the zoo model varies by 10-20 % from run to run, so a
# 3 % question cannot be answered with a clock. valgrind's callgrind counts the instructions of
# `fulgur run` (1 thread, greedy) without and with a drafter; the decode's share is the count of
# an N-token run minus that of a 1-token run (loading and the prompt's prefill cancel), per
# prompt. Instructions are not time (memory stalls are not counted), but on the cache-resident zoo
# pair the step is compute-bound, so they track it. About 2 minutes per run.
#
# usage: bench/spec_instructions.sh [--fulgur PATH] [-n 512] [--drafter "-md zoo/code-dspark-q8_0.gguf"]
#            [--prompts "heapq bisect"]   (Python standard library modules: their first 700 bytes)
set -euo pipefail
cd "$(dirname "$0")/.."
fulgur=build/fulgur n=512 drafter="-md zoo/code-dspark-q8_0.gguf" prompts="heapq bisect"
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --drafter) drafter=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "spec_instructions.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v valgrind > /dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fulgur_instr.XXXXXX")
trap 'rm -rf "$work"' EXIT

# instructions PROMPT N [fulgur run options...]: the instruction count of one run.
instructions() {
  local prompt=$1 tokens=$2
  shift 2
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$fulgur" run -m zoo/code-q8_0.gguf \
    -f "$work/$prompt.txt" -n "$tokens" -c $((n + 1024)) --temp 0 -t 1 --json "$@" > "$work/run.json" 2> "$work/log"
  grep -o 'refs: *[0-9,]*' "$work/log" | tr -dc 0-9
}

echo "| prompt | plain decode instructions | with \`$drafter\` | extra |"
echo "| --- | ---: | ---: | ---: |"
for p in $prompts; do
  head -c 700 "/usr/lib/python3.11/$p.py" > "$work/$p.txt"
  plain=$(( $(instructions "$p" "$n") - $(instructions "$p" 1) ))
  # shellcheck disable=SC2086
  spec=$(( $(instructions "$p" "$n" $drafter) - $(instructions "$p" 1 $drafter) ))
  python3 -c "print(f'| $p | {$plain:,} | {$spec:,} | {100 * ($spec / $plain - 1):+.2f} % |')"
done
