#!/usr/bin/env node
// Test oracle: llama.cpp's prebuilt CPU build (npm node-llama-cpp 3.22.1 with
// @node-llama-cpp/linux-x64) loads a GGUF, evaluates a prompt given as token ids (no tokenizer
// involved, so fulgur's and llama.cpp's tokenizers cannot make the runs differ) and decodes
// greedily.
//
// usage: node llama_greedy.mjs --model M.gguf --prompt-ids 1,2,3 [--n 32] [--threads 1]
//                              [--ctx 0] [--top 8] [--all-logits] [--kv-type F16|F32|Q8_0]
//                              [--flash-attention auto|on|off] [--log-level error|warn|info|debug]
//                              [--force-ids 4,5,6]
//
// --force-ids: teacher forcing. Step i feeds the i-th given token instead of llama.cpp's own
// choice at step i - 1, so every step is evaluated after the same tokens as another engine's
// greedy run (N = their count); `tokens` still holds llama.cpp's own choice at each step.
//
// Prints one JSON object on stdout:
//   tokens:      the N greedy tokens (the first one comes from the prompt's last position)
//   steps:       per generated token, the top `--top` raw logits of the position that chose it,
//                as [[id, logit], ...] sorted by logit (the margins show near-ties)
//   logits:      with --all-logits, the raw logits of the prompt's last position (n_vocab floats)
//   n_vocab, threads, ctx
//
// node-llama-cpp exposes raw logits through LlamaContextSequence.controlledEvaluate
// (generateNext.logits, documented as the raw logits after the sampling options; with temperature
// 0, no penalties and no bias nothing modifies them: they match fulgur's to ~5e-4 of their spread).
// --flash-attention auto (node-llama-cpp's default) gives the same logits as `on` with this CPU
// build; `off` is llama.cpp's other attention path (softmax weights rounded to f16 instead of Q).
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

function parse_args(argv) {
  const o = { model: "", promptIds: "", n: 32, threads: 1, ctx: 0, top: 8, allLogits: false, kvType: "F16",
              flashAttention: "auto", logLevel: "error", forceIds: "" };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--model") o.model = next();
    else if (a === "--prompt-ids") o.promptIds = next();
    else if (a === "--n") o.n = Number(next());
    else if (a === "--threads") o.threads = Number(next());
    else if (a === "--ctx") o.ctx = Number(next());
    else if (a === "--top") o.top = Number(next());
    else if (a === "--all-logits") o.allLogits = true;
    else if (a === "--kv-type") o.kvType = next();
    else if (a === "--flash-attention") o.flashAttention = { on: true, off: false, auto: "auto" }[next()];
    else if (a === "--log-level") o.logLevel = next();  // llama.cpp's own log (load info) on stderr
    else if (a === "--force-ids") o.forceIds = next();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model || !o.promptIds) throw new Error("--model and --prompt-ids are required");
  const ids = (text, what) => text.split(",").map((s) => {
    const v = Number(s.trim());
    if (!Number.isInteger(v) || v < 0) throw new Error(`${what}: bad token id "${s}"`);
    return v;
  });
  o.prompt = ids(o.promptIds, "--prompt-ids");
  o.forced = o.forceIds ? ids(o.forceIds, "--force-ids") : null;
  if (o.forced) o.n = o.forced.length;
  if (!(o.n >= 1) || !(o.threads >= 1)) throw new Error("--n and --threads must be >= 1");
  return o;
}

// Opens the CPU build only: no GPU probing, never a download or a source build.
export async function open_llama(threads, logLevel = "error") {
  return getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel[logLevel] ?? LlamaLogLevel.error,
    // stdout carries the JSON result only.
    logger: (level, message) => process.stderr.write(`[llama.cpp ${level}] ${message}\n`),
    maxThreads: threads,
  });
}

// Top-k [id, logit] pairs of a logit map (as node-llama-cpp returns them), highest first,
// ties broken by lower id.
function top_of(map, k) {
  return [...map.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k);
}

async function main() {
  const o = parse_args(process.argv.slice(2));
  const llama = await open_llama(o.threads, o.logLevel);
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const ctxSize = o.ctx > 0 ? o.ctx : Math.max(64, o.prompt.length + o.n + 8);
  const context = await model.createContext({
    contextSize: ctxSize,
    batchSize: Math.max(o.prompt.length, 1),
    threads: { ideal: o.threads, min: o.threads },
    sequences: 1,
    flashAttention: o.flashAttention,
    experimentalKvCacheKeyType: o.kvType,
    experimentalKvCacheValueType: o.kvType,
  });
  const seq = context.getSequence();

  // Greedy: temperature 0. The prompt's last position may return its full raw logits row;
  // every step returns its top-k logits, whose margins show near-ties.
  const want = (logitsAll) => ({
    generateNext: { token: true, logits: logitsAll ? true : { filter: { includeTop: o.top } },
                    options: { temperature: 0 } },
  });
  const tokens = [];
  const steps = [];
  let lastLogits = null;
  let input = o.prompt.map((t, i) => (i + 1 === o.prompt.length ? [t, want(o.allLogits)] : t));
  for (let step = 0; step < o.n; ++step) {
    const out = await seq.controlledEvaluate(input);
    const res = out[input.length - 1];
    if (res?.next?.token == null) throw new Error(`no token at step ${step}`);
    const logits = res.next.logits;
    if (step === 0 && o.allLogits) lastLogits = logits;
    tokens.push(res.next.token);
    steps.push(top_of(logits, o.top));
    input = [[o.forced ? o.forced[step] : res.next.token, want(false)]];
  }

  const result = { tokens, steps, threads: o.threads, ctx: context.contextSize };
  if (lastLogits) {
    let maxId = -1;
    for (const id of lastLogits.keys()) maxId = Math.max(maxId, id);
    const dense = new Array(maxId + 1).fill(null);
    for (const [id, v] of lastLogits) dense[id] = v;
    result.n_vocab = dense.length;
    result.logits = dense;
  }
  process.stdout.write(JSON.stringify(result) + "\n");
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => {
  process.stderr.write(`llama_greedy: ${e?.stack ?? e}\n`);
  process.exit(1);
});
