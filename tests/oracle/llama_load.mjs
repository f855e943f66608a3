#!/usr/bin/env node
// Test oracle: does llama.cpp's prebuilt CPU build (npm node-llama-cpp 3.22.1) load this GGUF?
//
// usage: node llama_load.mjs --model M.gguf
//
// Prints one JSON object on stdout: {"ok": true, "architecture": "..."} or {"ok": false,
// "error": "...", "log": ["llama.cpp log lines at warn level or above", ...]}, and exits 0
// either way (1 only when the oracle itself cannot run).
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

function parse_args(argv) {
  const o = { model: "" };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--model" && i + 1 < argv.length) o.model = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!o.model) throw new Error("--model is required");
  return o;
}

async function main() {
  const o = parse_args(process.argv.slice(2));
  const log = [];
  const llama = await getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => log.push(`${level}: ${message.trim()}`),
  });
  let result;
  try {
    const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
    result = { ok: true, architecture: model.fileInfo?.metadata?.general?.architecture ?? null };
    await model.dispose();
  } catch (e) {
    result = { ok: false, error: String(e?.message ?? e), log };
  }
  process.stdout.write(JSON.stringify(result) + "\n");
  await llama.dispose();
}

main().catch((e) => {
  process.stderr.write(`llama_load: ${e?.stack ?? e}\n`);
  process.exit(1);
});
