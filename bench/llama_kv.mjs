#!/usr/bin/env node
// The KV memory llama.cpp (npm node-llama-cpp's prebuilt CPU build) allocates for a context of
// each given size, read from its own log ("llama_kv_cache: size = X MiB" per cache; a model with
// sliding-window layers gets two caches, the window's and the full layers'), beside what
// `fulgur bench -c N --json` reports as kv_mib.
//
// usage: node bench/llama_kv.mjs --model M.gguf [--ctx 8192,32768]
// Prints one JSON object: {"model", "kv_mib": {"8192": X, ...}, "lines": {...}}.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

function parse_args(argv) {
  const o = { model: "", ctx: [8192, 32768] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
    if (a === "--model" || a === "-m") o.model = argv[++i];
    else if (a === "--ctx") o.ctx = argv[++i].split(",").map(Number);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model) throw new Error("--model is required");
  if (!o.ctx.every((n) => n >= 1)) throw new Error("--ctx takes positive sizes");
  return o;
}

async function main() {
  const o = parse_args(process.argv.slice(2));
  let log = [];
  const llama = await getLlama({
    gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
    logLevel: LlamaLogLevel.debug, logger: (level, message) => log.push(message), maxThreads: 2,
  });
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const out = { model: o.model, kv_mib: {}, lines: {} };
  for (const n of o.ctx) {
    log = [];
    const context = await model.createContext({ contextSize: n, batchSize: 512, sequences: 1, threads: 2 });
    await new Promise((r) => setTimeout(r, 200));  // the log reaches JavaScript asynchronously
    const lines = log.join("\n").split("\n").filter((l) => /^llama_kv_cache: size = *[0-9.]+ MiB/.test(l.trim()));
    if (lines.length === 0) throw new Error(`no KV cache size in llama.cpp's log for a context of ${n} (${log.length} log lines)`);
    out.kv_mib[n] = lines.reduce((s, l) => s + Number(l.match(/size = *([0-9.]+) MiB/)[1]), 0);
    out.lines[n] = lines.map((l) => l.trim());
    await context.dispose();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`llama_kv: ${e.message}\n`);
  process.exit(1);
});
