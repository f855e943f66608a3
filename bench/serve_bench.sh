#!/usr/bin/env bash
# Serving throughput, side by side: `fulgur serve` with N concurrent streaming clients against
# llama.cpp (node-llama-cpp's prebuilt CPU build) decoding N sequences of one context, on the
# same GGUF and thread count, N = 1, 4, 16, 64 (bench/serve_bench.mjs measures both). Rounds
# alternate which engine goes first, so drift in a shared machine's load hits both alike; the
# ratio of each round's pair is reported beside the medians.
#
# usage: bench/serve_bench.sh [--fulgur build/fulgur] [--model M.gguf] [-t 2] [--rounds 2]
#                             [-p 64] [-n 64] [--requests 2] [--streams "1 4 16 64"] [--out bench/RESULTS.md]
# Without --model it synthesizes models/synth-qwen3-0.6b-q8_0.gguf (as compare_llamacpp.sh).
# --out replaces the "## Server" section of that file (appending it when absent). --keep DIR
# keeps each run's JSON in DIR (and reuses what is there): the table covers every N found.
set -euo pipefail
cd "$(dirname "$0")/.."
fulgur=build/fulgur model="" threads=2 rounds=2 n_prompt=64 n_gen=64 requests=2 streams="1 4 16 64" out="" keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -p) n_prompt=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source bench/lib.sh
bench_model
if [ -n "$keep" ]; then work=$keep; mkdir -p "$work"; else work=$(mktemp -d); fi
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; [ -n "$keep" ] || rm -rf "$work"; }
trap cleanup EXIT

# A server with N slots, each room for one request; vocab: the model's vocabulary size.
start_slots() {
  local n=$1
  start_server "$work/serve.log" --parallel "$n" -c $((n * (n_prompt + n_gen + 16))) --ignore-eos --queue 0
  vocab=$(curl -s "$url/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["meta"]["n_vocab"])')
}

for n in $streams; do
  [ -n "$n" ] || continue
  start_slots "$n"
  for ((r = 0; r < rounds; ++r)); do
    if [ $((r % 2)) -eq 0 ]; then order="fulgur llama"; else order="llama fulgur"; fi
    for engine in $order; do
      echo "== $n streams, round $((r + 1))/$rounds: $engine" >&2
      if [ "$engine" = fulgur ]; then
        node bench/serve_bench.mjs fulgur --url "$url" --streams "$n" -p "$n_prompt" -n "$n_gen" --requests "$requests" \
          --vocab "$vocab" \
          > "$work/$n.fulgur.$r.json"
      else
        node bench/serve_bench.mjs llama --model "$model" --streams "$n" -p "$n_prompt" -n "$n_gen" -t "$threads" \
          --requests "$requests" \
          --vocab "$vocab" > "$work/$n.llama.$r.json"
      fi
      cat "$work/$n.$engine.$r.json" >&2
    done
  done
  stop_server
done

python3 - "$work" "$rounds" "$streams" "$model" "$threads" "$n_prompt" "$n_gen" "$out" "$requests" <<'PY'
import json, statistics, sys, subprocess
work, rounds, streams, model, threads, n_prompt, n_gen, out, requests = sys.argv[1:10]
rounds = int(rounds)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
load = open("/proc/loadavg").read().split()[:3]
import glob, os
streams = sorted({int(os.path.basename(f).split(".")[0]) for f in glob.glob(f"{work}/*.fulgur.0.json")})
rows = []
def read_json(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
for n in streams:
    f = [read_json(f"{work}/{n}.fulgur.{r}.json") for r in range(rounds)]
    l = [read_json(f"{work}/{n}.llama.{r}.json") for r in range(rounds)]
    med = lambda xs: statistics.median(xs)
    fr = f"{med([x['tok_s'] for x in f]):.1f} | "
    ft = f"{med([x['ttft_ms']['median'] for x in f]):.0f} / {med([x['ttft_ms']['p90'] for x in f]):.0f}"
    if all(l):
        ratios = [a["tok_s"] / b["tok_s"] for a, b in zip(f, l)]
        rows.append(f"| {n} | {fr}{med([x['tok_s'] for x in l]):.1f} | {min(ratios):.2f}-{max(ratios):.2f}x | {ft} | "
                    f"{med([x['ttft_ms']['median'] for x in l]):.0f} / {med([x['ttft_ms']['p90'] for x in l]):.0f} |")
    else:  # llama.cpp's run failed (its output says why)
        rows.append(f"| {n} | {fr}not measured | - | {ft} | - |")
text = f"""## Server

`bench/serve_bench.sh`: `fulgur serve` with N concurrent streaming clients (each {requests} request(s) of a {n_prompt}-token
prompt and {n_gen} generated tokens, greedy, no drafter) against llama.cpp (node-llama-cpp's CPU build) decoding N
sequences of one context with the same prompts and lengths, on `{model}`, {threads} threads, {rounds} rounds
alternating which engine goes first. Aggregate tokens/s is all generated tokens over the wall time of the whole run
(prefills included); time to first token (TTFT) is from sending a request (fulgur: HTTP, with the other streams
decoding) or starting a sequence (llama.cpp: in-process) to its first generated token. Host: {cpu}, shared with other
agents compiling (load average {' '.join(load)} at the end): read the paired ratios, not single figures.

| streams | fulgur tok/s | llama.cpp tok/s | fulgur / llama.cpp (per round) | fulgur TTFT median / p90 ms | llama.cpp TTFT median / p90 ms |
| ---: | ---: | ---: | ---: | ---: | ---: |
""" + "\n".join(rows) + "\n"
print(text)
if out:
    try:
        old = open(out).read()
    except FileNotFoundError:
        old = ""
    start = old.find("## Server")
    if start >= 0:
        end = old.find("\n## ", start + 1)
        old = old[:start] + text + ("" if end < 0 else old[end:])
    else:
        old = old.rstrip("\n") + "\n\n" + text
    open(out, "w").write(old)
PY
