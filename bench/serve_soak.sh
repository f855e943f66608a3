#!/usr/bin/env bash
# Soak of `fulgur serve` under client faults (not in CI): --clients loops issue requests back to
# back for --minutes, a seeded mix of /v1/completions and /v1/chat/completions, streamed and not,
# greedy, with seeded fractions cancelled (AbortController), disconnected mid-stream and read
# slowly; every completed reply must be exactly `fulgur run`'s text, no other request may fail,
# and the server's resident memory must stay within 5 % of its value after the warm-up
# (bench/serve_soak.mjs says each criterion). Prints its JSON summary; exits 1 when a criterion
# fails.
#
# usage: bench/serve_soak.sh [--minutes 30] [--clients 64] [--parallel 32] [--fulgur build/fulgur]
#                            [--model M.gguf] [-t 2] [--seed 1] [--prompts 16] [--json FILE]
# Without --model it synthesizes models/synth-qwen3-tiny-q8_0.gguf (2 layers of width 256 and
# Qwen3's 151k vocabulary): small enough that 64 clients get many requests through 2 cores, so
# the faults hit the server thousands of times. --parallel slots (default half the clients, so
# that cancels and disconnects also hit requests waiting in the queue); the queue holds every
# client. --json FILE also writes the summary there; the server's log is kept beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
fulgur=build/fulgur model="" threads=2 minutes=30 clients=64 parallel="" seed=1 prompts=16 json=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$parallel" ] || parallel=$(((clients + 1) / 2))
source bench/lib.sh
bench_model tiny
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# 256 tokens a slot: the longest prompt (a chat one, under 100 tokens) and 64 generated fit.
start_server "$work/serve.log" --parallel "$parallel" -c $((parallel * 256)) --ignore-eos --queue "$clients"
status=0
node bench/serve_soak.mjs --url "$url" --pid "$server_pid" --fulgur "$fulgur" --model "$model" --minutes "$minutes" \
  --clients "$clients" --seed "$seed" -t "$threads" --prompts "$prompts" > "$work/summary.json" || status=$?
cat "$work/summary.json"
if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "== the server is gone; the end of its log:" >&2
  tail -20 "$work/serve.log" >&2
  server_pid=""
fi
if [ -n "$json" ]; then
  cp "$work/summary.json" "$json"
  cp "$work/serve.log" "${json%.json}.serve.log"
fi
exit "$status"
