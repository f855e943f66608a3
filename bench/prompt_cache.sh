#!/usr/bin/env bash
# Time to first token with a shared prompt prefix (the server's prompt cache): a system prompt
# of --system tokens plus a new user turn of about --user tokens, sent once cold (a system
# prompt no slot has seen) and once warm (the same system prompt as the request before it, a
# different user turn), alternating for --rounds rounds. TTFT is the client's time to the whole
# reply of max_tokens 1 (prefill + one token); the server's own prompt_ms, prompt_n (tokens
# evaluated) and cache_n (tokens reused) are shown beside it.
#
# With --prompts K, each round sends K new system prompts cold, then each again warm: with K
# above --parallel, a warm one's slot has gone to another prompt in between, so its prefix comes
# back from the host-memory prompt cache (--cache-ram; pass --serve-args "--cache-ram 0" to see
# it cold again).
#
# usage: bench/prompt_cache.sh [--fulgur build/fulgur] [--model M.gguf] [-t 2] [--rounds 3]
#                              [--system 2000] [--user 20] [--parallel 2] [--prompts 1]
#                              [--serve-args "..."]
# Without --model it synthesizes models/synth-qwen3-0.6b-q8_0.gguf (as serve_bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
fulgur=build/fulgur model="" threads=2 rounds=3 n_system=2000 n_user=20 parallel=2 n_prompts=1 serve_args=
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --system) n_system=$2; shift 2 ;;
    --user) n_user=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --prompts) n_prompts=$2; shift 2 ;;
    --serve-args) serve_args=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source bench/lib.sh
bench_model
log=$(mktemp)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -f "$log"; }
trap cleanup EXIT
# shellcheck disable=SC2086  # serve_args is a list of options
start_server "$log" --parallel "$parallel" -c $(( 2 * parallel * (n_system + n_user + 64) )) --prefill-budget 4096 $serve_args
python3 - "$url" "$rounds" "$n_system" "$n_user" "$n_prompts" <<'PY'
import json, random, statistics, sys, time, urllib.request
url = sys.argv[1]
rounds, n_system, n_user, n_prompts = (int(a) for a in sys.argv[2:])
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
def text(seed, n_tokens):  # about one token per word of this vocabulary's byte-level BPE
    r = random.Random(seed)
    return " ".join(r.choice(words) + str(r.randrange(10)) for _ in range(n_tokens // 2))
def ask(system, user):
    body = json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                       "max_tokens": 1, "temperature": 0}).encode()
    req = urllib.request.Request(f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    reply = json.load(urllib.request.urlopen(req))
    return (time.perf_counter() - t0) * 1e3, reply["timings"]
rows = {"cold": [], "warm": []}
for i in range(rounds):
    systems = [text(1000 + i * n_prompts + k, n_system) for k in range(n_prompts)]
    for k, system in enumerate(systems):
        rows["cold"].append(ask(system, text(5000 + 2 * (i * n_prompts + k), n_user)))
    for k, system in enumerate(systems):
        rows["warm"].append(ask(system, text(5001 + 2 * (i * n_prompts + k), n_user)))
print("| request | TTFT median ms | server prompt_ms median | prompt_n | cache_n |")
print("| --- | --- | --- | --- | --- |")
for kind, rs in rows.items():
    print(f"| {kind} | {statistics.median(r[0] for r in rs):.1f} | {statistics.median(r[1]['prompt_ms'] for r in rs):.1f} "
          f"| {rs[-1][1]['prompt_n']} | {rs[-1][1]['cache_n']} |")
cold = statistics.median(r[0] for r in rows["cold"]); warm = statistics.median(r[0] for r in rows["warm"])
print(f"\nwarm / cold TTFT: {cold / warm:.1f}x faster ({rounds} rounds of {n_prompts} system prompts, cold then warm)")
PY
