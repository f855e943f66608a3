#!/usr/bin/env bash
# Every quant type people download, fulgur against llama.cpp on files llama.cpp itself wrote:
# a seeded-random f16 synth model of a Qwen3 shape is quantized by llama.cpp's own
# llama_model_quantize (the npm package's libllama, through build/llama_quantize) into each of
# llama.cpp's named mixes (Q4_K_M puts Q6_K on some tensors, and so on: the files the GGUF
# repositories publish), with a seeded random importance matrix for the types that need one.
# Per file, the engines alternate for --rounds rounds (fulgur, llama.cpp, llama.cpp, fulgur, ...):
# prefill of P tokens, decode of N tokens, and fulgur's decode against the read floor measured
# beside it (`fulgur bench --floor`). Writes a markdown table (--out, default
# bench/RESULTS-types.md); the quantized files are cached under --models.
#
# usage: bench/quant_types.sh [--fulgur PATH] [--shape 0.6b|1.7b|4b] [--types "q8_0 q4_k_m ..."]
#            [-t 2] [-p 128] [-n 32] [--rounds 2] [--reps 2] [--models DIR] [--out FILE] [--prepare]
#            [--llama-cpu VARIANT]
#   --prepare  only write the files (minutes per type; do it before a quiet window for the timings)
#   --llama-cpu VARIANT  llama.cpp runs only its libggml-cpu-VARIANT.so build (haswell = AVX2,
#              zen4, skylakex, ...): the package's other CPU builds are moved aside for the run and
#              put back on exit; pair it with FULGUR_ISA=avx2 to compare the AVX2 paths on an
#              AVX-512 host
set -euo pipefail
cd "$(dirname "$0")/.."

fulgur="" shape=0.6b threads=2 n_prompt=128 n_gen=32 rounds=2 reps=2 models_dir=models
out=bench/RESULTS-types.md prepare=0 llama_cpu=""
types="q8_0 q6_k q5_k_m q5_k_s q4_k_m q4_k_s q3_k_m q3_k_s q2_k q5_0 q5_1 q4_0 q4_1 iq4_xs iq4_nl
       iq3_m iq3_s iq3_xxs iq2_m iq2_s iq2_xs iq2_xxs iq1_m iq1_s tq2_0 tq1_0"
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    -t|--threads) threads=$2; shift 2 ;;
    -p) n_prompt=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --models) models_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --prepare) prepare=1; shift ;;
    --llama-cpu) llama_cpu=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "quant_types.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$fulgur" ] || fulgur=build/fulgur
[ -x "$fulgur" ] || { echo "no fulgur binary at $fulgur: build it or pass --fulgur PATH" >&2; exit 2; }
quantize="$(dirname "$fulgur")/llama_quantize"
[ -x "$quantize" ] || { echo "no $quantize: build the llama_quantize target (FULGUR_TESTS=ON)" >&2; exit 2; }
libllama=$(ls node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama*.so 2>/dev/null | head -1)
[ -n "$libllama" ] || { echo "node-llama-cpp is not installed: run 'npm ci'" >&2; exit 2; }

mkdir -p "$models_dir"
work=$(mktemp -d "${TMPDIR:-/tmp}/fulgur_types.XXXXXX")
bins=$(dirname "$libllama")
trap 'if [ -d "$work/aside" ]; then mv "$work"/aside/* "$bins"/; fi; rm -rf "$work"' EXIT
if [ -n "$llama_cpu" ]; then
  [ -f "$bins/libggml-cpu-$llama_cpu.so" ] || {
    echo "no llama.cpp CPU build '$llama_cpu' in $bins (see its libggml-cpu-*.so)" >&2; exit 2; }
  mkdir "$work/aside"
  for lib in "$bins"/libggml-cpu-*.so; do
    [ "$lib" = "$bins/libggml-cpu-$llama_cpu.so" ] || mv "$lib" "$work/aside/"
  done
fi

src="$models_dir/synth-qwen3-$shape-f16.gguf"
[ -f "$src" ] || { echo "== synthesizing $src"; "$fulgur" synth --arch qwen3 --shape "$shape" --seed 1 --type f16 -o "$src"; }
# A seeded random importance matrix (llama.cpp's legacy .dat: per weight matrix its name, a call
# count and one positive sum of squared activations per input column), as the tests make one.
imatrix="$models_dir/synth-qwen3-$shape.imatrix.dat"
if [ ! -f "$imatrix" ]; then
  "$fulgur" inspect "$src" --json | python3 -c '
import json, random, struct, sys
rng = random.Random(777)
out = open(sys.argv[1], "wb")
mats = [t for t in json.load(sys.stdin)["tensors"]
        if len(t["shape"]) >= 2 and t["shape"][1] > 1 and "_norm" not in t["name"]
        and not t["name"].startswith("token_embd")]
out.write(struct.pack("<i", len(mats)))
for t in mats:
    name = t["name"].encode()
    n = t["shape"][0] * (t["shape"][2] if len(t["shape"]) > 2 else 1)
    out.write(struct.pack("<i", len(name)) + name + struct.pack("<ii", 10, n))
    out.write(struct.pack(f"<{n}f", *(10 * (0.1 + 9.9 * rng.random()) for _ in range(n))))
out.write(struct.pack("<i", 3) + struct.pack("<i", 15) + b"calibration.txt")
' "$imatrix"
fi

rows=()
for type in $types; do
  model="$models_dir/llq-qwen3-$shape-$type.gguf"
  if [ ! -f "$model" ]; then
    echo "== llama.cpp quantizes $model"
    "$quantize" "$libllama" "$src" "$model.tmp" "$type" "$threads" "$imatrix" > "$work/quantize.log" 2>&1 || {
      tail -5 "$work/quantize.log" >&2; echo "llama.cpp could not write $type; skipped" >&2; rm -f "$model.tmp"; continue; }
    mv "$model.tmp" "$model"
  fi
  [ "$prepare" = 0 ] || continue
  cat "$model" > /dev/null  # into the page cache, so neither engine pays the disk read
  for ((r = 0; r < rounds; ++r)); do
    if [ $((r % 2)) -eq 0 ]; then order="fulgur llama"; else order="llama fulgur"; fi
    for engine in $order; do
      echo "== $type round $((r + 1))/$rounds: $engine"
      if [ "$engine" = fulgur ]; then
        "$fulgur" bench -m "$model" -p "$n_prompt" -n "$n_gen" -t "$threads" -r "$reps" --verify 0 --floor --json \
          > "$work/$type.fulgur.$r.json" 2> "$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }
      else
        node bench/llama_bench.mjs --model "$model" -p "$n_prompt" -n "$n_gen" -t "$threads" -r "$reps" \
          > "$work/$type.llama.$r.json" 2> "$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }
      fi
    done
  done
  rows+=("$type|$model")
done

[ "$prepare" = 0 ] || exit 0
python3 - "$work" "$out" "$shape" "$threads" "$n_prompt" "$n_gen" "$rounds" "$reps" "$fulgur" "${llama_cpu:-best}" "${rows[@]}" <<'EOF'
import collections, datetime, json, os, statistics, subprocess, sys
work, out, shape, threads, n_prompt, n_gen, rounds, reps, fulgur, llama_cpu = sys.argv[1:11]
rows = [r.split("|", 1) for r in sys.argv[11:]]
rounds = int(rounds)
med = statistics.median

def load(type_, engine):
    return [json.load(open(f"{work}/{type_}.{engine}.{r}.json")) for r in range(rounds)]

def tensor_types(model):
    j = json.loads(subprocess.run([fulgur, "inspect", model, "--json"], capture_output=True, text=True).stdout)
    counts = collections.Counter(t["type"] for t in j["tensors"] if len(t["shape"]) >= 2)
    return ", ".join(f"{n} {t}" for t, n in counts.most_common())

cpu, family, model_no, flags = "?", "?", "?", set()
for line in open("/proc/cpuinfo"):
    key, _, value = line.partition(":")
    key, value = key.strip(), value.strip()
    if key == "model name" and cpu == "?": cpu = value
    elif key == "cpu family" and family == "?": family = value
    elif key == "model" and model_no == "?": model_no = value
    elif key == "flags" and not flags: flags = set(value.split())
commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
isa = None
lines = [f"## Quant types on `{shape}`: fulgur vs llama.cpp on llama.cpp's own files\n"]
table = ["| type (llama.cpp mix) | GB/token | prefill fulgur | prefill llama.cpp | **prefill ratio** | "
         "decode fulgur | decode llama.cpp | **decode ratio** | fulgur decode, share of floor | matrices by type |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
for type_, model in rows:
    f, l = load(type_, "fulgur"), load(type_, "llama")
    isa = f[0]["isa"]
    # Each round's ratio, then their median: the two engines of a round ran minutes apart at most.
    pr = med([a["prefill_tok_s"] / b["prefill_tok_s"] for a, b in zip(f, l)])
    dr = med([a["decode_tok_s"] / b["decode_tok_s"] for a, b in zip(f, l)])
    share = med([a["decode_share_of_floor"] for a in f])
    table.append(f"| {type_} | {f[0]['weights_gb_per_token']:.3f} | {med([a['prefill_tok_s'] for a in f]):.1f} | "
                 f"{med([b['prefill_tok_s'] for b in l]):.1f} | **{pr:.2f}x** | {med([a['decode_tok_s'] for a in f]):.1f} | "
                 f"{med([b['decode_tok_s'] for b in l]):.1f} | **{dr:.2f}x** | {100 * share:.0f} % | {tensor_types(model)} |")
lines.append(f"`bench/quant_types.sh --shape {shape}` on {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, fulgur "
             f"`{commit}`, llama.cpp = npm node-llama-cpp 3.22.1 prebuilt CPU build "
             f"({'the one its loader picks for this CPU' if llama_cpu == 'best' else 'libggml-cpu-' + llama_cpu + ' only'}). Host: {cpu} (family {family} model "
             f"{model_no}), fulgur kernels {isa}, {threads} threads. Files: `fulgur synth --arch qwen3 --shape {shape} "
             f"--type f16` quantized by llama.cpp's `llama_model_quantize` (seeded random importance matrix). "
             f"Prefill {n_prompt} tokens in one batch, decode {n_gen} tokens; {rounds} rounds alternating the engines, "
             f"{reps} repetitions each; tok/s medians, ratios the median of per-round ratios. The floor share is "
             f"fulgur's decode against the read bandwidth measured between its decode stretches (`--floor`).\n")
lines += table
text = "\n".join(lines) + "\n"
print(text)
with open(out, "a") as fh:
    fh.write("\n" + text)
EOF
