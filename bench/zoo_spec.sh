#!/usr/bin/env bash
# End-to-end decode speed on the trained zoo pair (../shared/zoo) with and without each drafter:
# greedy generation of N tokens from file prefixes of Python sources, `fulgur run --json`
# timings summed over the prompts. Prints a markdown table (and appends it to --out if given).
#
# usage: bench/zoo_spec.sh [--fulgur PATH] [--zoo DIR] [-t THREADS] [-n 128] [--type f32|q8_0]
#            [--standin 0.6b|1.7b|4b] [--out FILE]
# --standin: the target is a stand-in of the zoo target (`fulgur standin`: the same function,
# reading as many bytes per token as Qwen3 of that size), so decoding is memory-bound.
set -euo pipefail
cd "$(dirname "$0")/.."

fulgur="" zoo=${FULGUR_ZOO_DIR:-../shared/zoo} threads=2 n_gen=128 type=f32 out="" standin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    --zoo) zoo=$2; shift 2 ;;
    -t|--threads) threads=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --standin) standin=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "zoo_spec.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$fulgur" ]; then
  for c in build/fulgur build-*/fulgur; do [ -x "$c" ] && { fulgur=$c; break; }; done
fi
[ -n "$fulgur" ] && [ -x "$fulgur" ] || { echo "no fulgur binary: build it and pass --fulgur PATH" >&2; exit 2; }
[ -f "$zoo/zoo-dspark/config.json" ] || { echo "no zoo at $zoo (pass --zoo DIR)" >&2; exit 2; }

models=models/zoo-$type
mkdir -p "$models"
for name in zoo-qwen3-code zoo-qwen3-code-draft zoo-dspark; do
  [ -f "$models/$name.gguf" ] || "$fulgur" convert "$zoo/$name" -o "$models/$name.gguf" --type "$type" --no-progress
done
work=$(mktemp -d "${TMPDIR:-/tmp}/fulgur_zoo.XXXXXX")
trap 'rm -rf "$work"' EXIT
target=$models/zoo-qwen3-code.gguf
what="the trained zoo target ($type)"
if [ -n "$standin" ]; then
  target=$models/zoo-qwen3-code-standin-$standin.gguf
  [ -f "$target" ] || "$fulgur" standin -m "$models/zoo-qwen3-code.gguf" --size "$standin" -o "$target" >/dev/null
  what="a $standin stand-in of the trained zoo target ($type; \`fulgur standin\`: its function, $(( $(stat -c %s "$target") / 1000000 )) MB read per token)"
fi
prompts=()
for src in textwrap heapq bisect shlex fnmatch glob; do
  f=/usr/lib/python3.11/$src.py
  [ -f "$f" ] || continue
  head -c 700 "$f" > "$work/$src.txt"
  prompts+=("$work/$src.txt")
done
[ ${#prompts[@]} -gt 0 ] || { echo "no Python sources under /usr/lib/python3.11 for prompts" >&2; exit 2; }

# Each drafter twice: with the draft length chosen per step (the default) and with
# --spec-fixed-n (always up to n-max, as llama.cpp).
cases=("plain|")
for d in "ngram|--spec ngram" \
         "draft model (n-max 4)|-md $models/zoo-qwen3-code-draft.gguf --spec-n-max 4" \
         "DSpark (n-max 7)|-md $models/zoo-dspark.gguf --spec dflash --spec-n-max 7"; do
  cases+=("$d" "${d%%|*}, fixed length|${d#*|} --spec-fixed-n")
done
table="| drafter | tokens/s | vs plain | mean accepted length | output = plain |
| --- | ---: | ---: | ---: | --- |"
plain_tps=""
for c in "${cases[@]}"; do
  label=${c%%|*} args=${c#*|}
  tokens=0 secs=0 lens="" same=yes
  for p in "${prompts[@]}"; do
    # shellcheck disable=SC2086
    "$fulgur" run -m "$target" -f "$p" -n "$n_gen" --temp 0 --ignore-eos --json \
      -t "$threads" $args > "$work/out.json"
    read -r n s st < <(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); \
print(len(j['tokens']), j['timings']['decode_s'], j.get('spec', {}).get('mean_accepted_length', 1.0))" "$work/out.json")
    tokens=$((tokens + n)); secs=$(python3 -c "print($secs + $s)"); lens+=" $st"
    base="$work/$(basename "$p").plain.json"
    if [ "$label" = plain ]; then cp "$work/out.json" "$base"
    elif ! python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['tokens'] != json.load(open(sys.argv[2]))['tokens'])" \
           "$work/out.json" "$base"; then same=NO; fi
  done
  tps=$(python3 -c "print(f'{$tokens / $secs:.1f}')")
  [ -n "$plain_tps" ] || plain_tps=$tps
  ratio=$(python3 -c "print(f'{$tps / $plain_tps:.2f}x')")
  per_step=$(python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; print(f'{sum(v) / len(v):.2f}')" $lens)
  table+=$'\n'"| $label | $tps | $ratio | $per_step | $same |"
done
text="## Zoo pair, end to end${standin:+ (stand-in $standin)}

\`bench/zoo_spec.sh${standin:+ --standin $standin}\`: $what generating $n_gen tokens greedily from ${#prompts[@]} Python file prefixes, $threads threads, decode time only (each prompt a fresh process, so the draft-length choice starts from nothing every time).

$table
"
echo "$text"
[ -z "$out" ] || printf '\n%s' "$text" >> "$out"
