#!/usr/bin/env bash
# The README's first command: install what fulgur needs, build it, and show what it is for on
# the small trained code model in zoo/ (a 5.7M-parameter Qwen3 trained on Python, with its
# DSpark block draft): the same greedy completion of a Python prompt without and with the draft,
# both speeds and how many drafted tokens the target accepted, on the model itself and on its
# 0.6b stand-in (`fulgur standin`: the same function, reading as many bytes per token as
# Qwen3-0.6B, as every model a user runs does); then `fulgur serve` on the pair, queried once
# with curl as an OpenAI client would.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --runtime
scripts/build.sh --binary

target=zoo/code-q8_0.gguf
draft=zoo/code-dspark-q8_0.gguf
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/prompt.py" <<'PY'
import os
import sys


def read_config(path):
    """Read a configuration file and return a dict."""
PY

echo "== the prompt"
cat "$work/prompt.py"
# compare MODEL LABEL: greedy 160 tokens without and with the draft.
compare() {
  build/fulgur run -m "$1" -f "$work/prompt.py" -n 160 --temp 0 --json > "$work/plain.json"
  build/fulgur run -m "$1" -md "$draft" -f "$work/prompt.py" -n 160 --temp 0 --json > "$work/spec.json"
  python3 - "$work/plain.json" "$work/spec.json" "$2" <<'PY'
import json, sys
plain, spec = (json.load(open(p)) for p in sys.argv[1:3])
if sys.argv[3] == "toy":
    print("== the completion (greedy, 160 tokens)")
    print(plain["text"])
    print("== speed on the zoo model itself (6 MB of weights: it sits in the CPU's cache, so a")
    print("   token costs ~0.2 ms and drafting has little to save)")
else:
    print("== speed on its 0.6b stand-in (the same function reading 633 MB per token, as")
    print("   Qwen3-0.6B at Q8_0 does: memory-bound, like every model a user runs)")
p, s = plain["timings"]["decode_tok_s"], spec["timings"]["decode_tok_s"]
print(f"target alone      : {p:8.1f} tokens/s")
print(f"with DSpark draft : {s:8.1f} tokens/s  ({s / p:.2f}x)")
st = spec["spec"]
print(f"drafted {st['drafted']} tokens, the target accepted {st['accepted']} "
      f"({100 * st['acceptance_rate']:.0f} %), {st['mean_accepted_length']:.2f} tokens per verify step")
print("identical output with and without the draft:", plain["tokens"] == spec["tokens"])
PY
}
compare "$target" toy
build/fulgur standin -m "$target" --size 0.6b -o "$work/code-0.6b.gguf" > /dev/null
compare "$work/code-0.6b.gguf" standin

echo "== fulgur serve, one request with curl"
build/fulgur serve -m "$target" -md "$draft" --port 0 -c 2048 --parallel 4 > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q "http://" "$work/serve.log" && break; sleep 0.1; done
url=$(grep -o "http://[0-9.:]*" "$work/serve.log" | head -1)
grep "http://" "$work/serve.log" | head -1
python3 -c 'import json,sys; print(json.dumps({"prompt": open(sys.argv[1]).read(), "max_tokens": 64, "temperature": 0}))' \
  "$work/prompt.py" > "$work/request.json"
echo "curl -s $url/v1/completions -H 'Content-Type: application/json' -d @request.json"
curl -s "$url/v1/completions" -H 'Content-Type: application/json' -d @"$work/request.json" > "$work/reply.json"
python3 - "$work/reply.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["timings"]
print(r["choices"][0]["text"])
print(f"-> {r['usage']['completion_tokens']} tokens at {t['predicted_per_second']:.0f} tokens/s, "
      f"{t['draft_n_accepted']} of {t['draft_n']} drafted tokens accepted")
PY
echo "(the chat page: $url/ while a server runs; this one stops now)"
