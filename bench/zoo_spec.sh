#!/usr/bin/env bash
# End-to-end decode speed of the trained zoo's drafters (../shared/zoo) against plain decoding:
# greedy generation of N tokens from file prefixes of Python sources with `fulgur run --json`,
# every case once per prompt and round, the cases alternating inside each round, so that a
# shared host's drift hits all of them alike. Prints a markdown table (and appends it to --out).
#
# usage: bench/zoo_spec.sh [--fulgur PATH] [--zoo DIR] [--target qwen3|qwen35] [--type q8_0|f32]
#            [--standin 0.6b|1.7b|4b] [-t 2] [-n 128] [--prompts 6] [--rounds 2] [--llama]
#            [--out FILE] [--raw FILE]
# --raw: also write every run's JSON to FILE.
# --target: qwen3 (zoo-qwen3-code: n-gram, its draft model, its DSpark draft, the latter also
#   with the adaptive schedule, against the default confidence schedule) or qwen35
#   (zoo-qwen35-code: n-gram, its MTP block, both).
# --standin: the target is a stand-in of the zoo target (`fulgur standin`: the same function,
#   reading as many bytes per token as Qwen3 of that size), so decoding is memory-bound.
# --llama: also llama.cpp (npm node-llama-cpp) on the same target: plain, and (qwen3) its
#   draft-model speculation with the zoo draft model at n-max 4 (bench/llama_spec.mjs).
#
# Each drafter runs with the default schedule and with --spec-fixed-n (always n-max). Its
# ceiling is the best speedup a fixed draft length k could give with the costs and acceptance
# this run measured: (1 + sum of the first k per-position acceptances of the fixed-length run)
# / (a verification of k+1 rows + the drafting, in plain decode steps), the verification's cost
# from `fulgur bench --verify` at the same depth; it leaves out the loop's own bookkeeping, so it
# is an upper bound.
set -euo pipefail
cd "$(dirname "$0")/.."

fulgur="" zoo=${FULGUR_ZOO_DIR:-../shared/zoo} threads=2 n_gen=128 type=q8_0 out="" standin=""
target_kind=qwen3 n_prompts=6 rounds=2 llama=0 raw=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    --zoo) zoo=$2; shift 2 ;;
    --target) target_kind=$2; shift 2 ;;
    -t|--threads) threads=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --standin) standin=$2; shift 2 ;;
    --prompts) n_prompts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --llama) llama=1; shift ;;
    --raw) raw=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "zoo_spec.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$fulgur" ]; then
  for c in build/fulgur build-*/fulgur; do [ -x "$c" ] && { fulgur=$c; break; }; done
fi
[ -n "$fulgur" ] && [ -x "$fulgur" ] || { echo "no fulgur binary: build it and pass --fulgur PATH" >&2; exit 2; }
[ -f "$zoo/zoo-dspark/config.json" ] || { echo "no zoo at $zoo (pass --zoo DIR)" >&2; exit 2; }
case "$target_kind" in qwen3|qwen35) ;; *) echo "--target must be qwen3 or qwen35" >&2; exit 2 ;; esac

models=models/zoo-$type
mkdir -p "$models"
if [ "$target_kind" = qwen3 ]; then
  for name in zoo-qwen3-code zoo-qwen3-code-draft zoo-dspark; do
    [ -f "$models/$name.gguf" ] || "$fulgur" convert "$zoo/$name" -o "$models/$name.gguf" --type "$type" --no-progress
  done
  source_gguf=$models/zoo-qwen3-code.gguf
else
  source_gguf=$models/zoo-qwen35-code.gguf
  if [ ! -f "$source_gguf" ]; then
    if [ "$type" = f32 ]; then
      cp "$zoo/zoo-qwen35-code/zoo-qwen35-code-f32.gguf" "$source_gguf"
    else
      # fulgur quantize does not take qwen35 yet: llama.cpp's own quantizer (tests/tools).
      declare -A ftype=([q8_0]=7 [q4_k]=15)
      [ -n "${ftype[$type]:-}" ] || { echo "--type $type: q8_0, q4_k or f32 for qwen35" >&2; exit 2; }
      lib=$(ls node_modules/@node-llama-cpp/linux-x64*/bins/*/libllama*.so 2>/dev/null | grep -v libllama-common | head -1)
      [ -n "$lib" ] && [ -x build/llama_quantize ] || { echo "needs build/llama_quantize and npm ci" >&2; exit 2; }
      build/llama_quantize "$lib" "$zoo/zoo-qwen35-code/zoo-qwen35-code-f32.gguf" "$source_gguf" "${ftype[$type]}" >/dev/null
    fi
  fi
fi
target=$source_gguf
what="the trained zoo target \`$(basename "$source_gguf")\`"
if [ -n "$standin" ]; then
  target=${source_gguf%.gguf}-standin-$standin.gguf
  [ -f "$target" ] || "$fulgur" standin -m "$source_gguf" --size "$standin" --type "$type" -o "$target" --no-progress >/dev/null
  what="a $standin stand-in of \`$(basename "$source_gguf")\` (\`fulgur standin\`: its function, $(( $(stat -c %s "$target") / 1000000 )) MB read per token)"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fulgur_zoo.XXXXXX")
trap 'rm -rf "$work"' EXIT
prompts=()
for src in textwrap heapq bisect shlex fnmatch glob; do
  f=/usr/lib/python3.11/$src.py
  [ -f "$f" ] && [ ${#prompts[@]} -lt "$n_prompts" ] || continue
  head -c 700 "$f" > "$work/$src.txt"
  prompts+=("$work/$src.txt")
done
[ ${#prompts[@]} -gt 0 ] || { echo "no Python sources under /usr/lib/python3.11 for prompts" >&2; exit 2; }

# label | fulgur options | drafting cost: block (one block per draft, whatever its length),
# token (proportional to the draft's length) or empty (no ceiling: see zoo_spec_run.py)
if [ "$target_kind" = qwen3 ]; then
  drafters=("ngram|--spec ngram|"
            "draft model (n-max 4)|-md $models/zoo-qwen3-code-draft.gguf --spec-n-max 4|token"
            "DSpark (n-max 7)|-md $models/zoo-dspark.gguf --spec dflash --spec-n-max 7|block")
  extras=("DSpark (n-max 7), adaptive schedule|-md $models/zoo-dspark.gguf --spec dflash --spec-n-max 7 --spec-schedule adaptive|DSpark (n-max 7)")
  llama_draft=$models/zoo-qwen3-code-draft.gguf
else
  drafters=("ngram|--spec ngram|"
            "MTP (n-max 3)|--spec draft-mtp --spec-n-max 3|token"
            "n-gram, then MTP|--spec ngram,draft-mtp --spec-n-max 3|")
  extras=()
  llama_draft=""
fi
text=$(python3 bench/zoo_spec_run.py --fulgur "$fulgur" --target "$target" -t "$threads" -n "$n_gen" \
  --rounds "$rounds" --llama "$llama" --llama-draft "$llama_draft" --what "$what" --raw "$raw" \
  --title "Zoo ${target_kind} target${standin:+ on its $standin stand-in}, end to end" \
  "${drafters[@]/#/--drafter=}" "${extras[@]/#/--extra=}" -- "${prompts[@]}")
echo "$text"
[ -z "$out" ] || printf '\n%s\n' "$text" >> "$out"
