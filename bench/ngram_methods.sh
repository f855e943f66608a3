#!/usr/bin/env bash
# The n-gram drafters side by side on a repeated-prefix workload: each prompt quotes a Python
# file prefix, then asks for it again (a comment and its first line), so the answer repeats the
# quoted context. Greedy generation of N tokens with the trained code model (zoo/code-q8_0.gguf),
# each method with its llama.cpp defaults, `fulgur run --json` decode timings summed over the
# prompts. Prints a markdown table (and appends it to --out if given).
#
# usage: bench/ngram_methods.sh [--fulgur PATH] [-m MODEL] [-t THREADS] [-n 128] [--rounds 3]
#            [--out FILE] [--extra 'ARGS for every speculative run, e.g. --spec-schedule fixed']
set -euo pipefail
cd "$(dirname "$0")/.."

fulgur="" model=zoo/code-q8_0.gguf threads=2 n_gen=128 out="" extra="" rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    -m) model=$2; shift 2 ;;
    -t|--threads) threads=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --extra) extra=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "ngram_methods.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$fulgur" ]; then
  for c in build/fulgur build-*/fulgur; do [ -x "$c" ] && { fulgur=$c; break; }; done
fi
[ -n "$fulgur" ] && [ -x "$fulgur" ] || { echo "no fulgur binary: build it and pass --fulgur PATH" >&2; exit 2; }
[ -f "$model" ] || { echo "no model '$model' (pass -m FILE)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fulgur_ngram.XXXXXX")
trap 'rm -rf "$work"' EXIT
prompts=()
for src in textwrap heapq bisect shlex; do
  f=/usr/lib/python3.11/$src.py
  [ -f "$f" ] || continue
  { head -c 900 "$f"; printf '\n\n# The same module again, unchanged:\n'; head -n 1 "$f"; } > "$work/$src.txt"
  prompts+=("$work/$src.txt")
done
[ ${#prompts[@]} -gt 0 ] || { echo "no Python sources under /usr/lib/python3.11 for prompts" >&2; exit 2; }

cases=("plain|" "ngram-simple|--spec ngram-simple" "ngram-map-k|--spec ngram-map-k"
       "ngram-map-k4v|--spec ngram-map-k4v" "ngram-mod|--spec ngram-mod" "ngram-cache|--spec ngram-cache")
# Each method's tokens/s is the median of --rounds rounds; the rounds go over all methods in turn,
# so load from elsewhere on the machine falls on every method alike.
declare -A tps_of drafted_of accepted_of steps_of same_of
for ((r = 0; r < rounds; ++r)); do
  for c in "${cases[@]}"; do
    label=${c%%|*} args=${c#*|}
    [ "$label" = plain ] || args="$args $extra"
    tokens=0 secs=0 drafted=0 accepted=0 steps=0 same=yes
    for p in "${prompts[@]}"; do
      # shellcheck disable=SC2086
      "$fulgur" run -m "$model" -f "$p" -n "$n_gen" --temp 0 --ignore-eos --json -t "$threads" $args \
        > "$work/out.json" 2> /dev/null
      read -r n s d a v < <(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sp=j.get('spec', {}); \
print(len(j['tokens']), j['timings']['decode_s'], sp.get('drafted', 0), sp.get('accepted', 0), sp.get('verify_steps', 0))" "$work/out.json")
      tokens=$((tokens + n)) drafted=$((drafted + d)) accepted=$((accepted + a)) steps=$((steps + v))
      secs=$(python3 -c "print($secs + $s)")
      base="$work/$(basename "$p").plain.json"
      if [ "$label" = plain ]; then cp "$work/out.json" "$base"
      elif ! python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['tokens'] != json.load(open(sys.argv[2]))['tokens'])" \
             "$work/out.json" "$base"; then same=NO; fi
    done
    tps_of[$label]+=" $(python3 -c "print($tokens / $secs)")"
    drafted_of[$label]=$drafted accepted_of[$label]=$accepted steps_of[$label]=$steps
    [ "${same_of[$label]:-yes}" = NO ] || same_of[$label]=$same
  done
done
table="| method | tokens/s | vs plain | drafted | accepted | acceptance | mean accepted length | output = plain |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
plain_tps=$(median ${tps_of[plain]})
for c in "${cases[@]}"; do
  label=${c%%|*}
  tps=$(median ${tps_of[$label]})
  read -r tps_s ratio rate mal < <(python3 -c "d,a,v=${drafted_of[$label]},${accepted_of[$label]},${steps_of[$label]}; \
print(f'{$tps:.0f}', f'{$tps / $plain_tps:.2f}x', f'{a / d:.2f}' if d else '-', f'{1 + a / v:.2f}' if v else '-')")
  table+=$'\n'"| $label | $tps_s | $ratio | ${drafted_of[$label]} | ${accepted_of[$label]} | $rate | $mal | ${same_of[$label]} |"
done
text="## n-gram drafters on a repeated-prefix workload

\`bench/ngram_methods.sh${extra:+ --extra '$extra'}\`: \`$(basename "$model")\` generating $n_gen tokens greedily after ${#prompts[@]} prompts that quote a Python file prefix (900 bytes) and ask for it again, $threads threads, decode time only (median of $rounds rounds taken in turn), each method with llama.cpp's defaults; drafted/accepted: the last round. Mean accepted length: tokens per verify step (the target's own included).

$table
"
echo "$text"
[ -z "$out" ] || printf '\n%s' "$text" >> "$out"
