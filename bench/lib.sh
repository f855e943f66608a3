# Shared by the bench scripts that run `fulgur serve` (source it after setting fulgur, model,
# threads): the default model, a server on a free port, and its stop.

# bench_model [SHAPE]: the model to measure: $model, or the synthesized Qwen3 Q8_0 of that shape
# (`fulgur synth --shape`, default 0.6b, seed 1) made once under models/. Read through once so
# that timings start from the page cache.
bench_model() {
  if [ -z "$model" ]; then
    local shape=${1:-0.6b}
    model=models/synth-qwen3-$shape-q8_0.gguf
    [ -f "$model" ] || { mkdir -p models; "$fulgur" synth --arch qwen3 --shape "$shape" --seed 1 --type q8_0 -o "$model"; }
  fi
  cat "$model" > /dev/null
}

# start_server LOG [serve options...]: `fulgur serve` on $model and a free port; sets server_pid
# and url (http://HOST:PORT), or prints the log and exits when the server does not come up.
start_server() {
  local log=$1
  shift
  "$fulgur" serve -m "$model" --port 0 -t "$threads" "$@" > "$log" 2>&1 &
  server_pid=$!
  url=""
  for _ in $(seq 600); do
    url=$(grep -o "http://[0-9.:]*" "$log" | head -1 || true)
    [ -n "$url" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  exit 1
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
