#!/usr/bin/env node
// Test oracle: llama.cpp's tokenizer (prebuilt CPU build, npm node-llama-cpp 3.22.1) on a GGUF's
// vocabulary, so fulgur's tokenizer can be compared with code nobody here wrote.
//
// usage: node llama_tokenize.mjs MODEL.gguf INPUT_JSON OUTPUT_JSON
//   INPUT_JSON:  [{"text": "...", "parse_special": true|false}, ...]
//   OUTPUT_JSON: [{"ids": [...], "text": "..."}, ...] in the same order: llama_tokenize with
//                add_special = false, and llama_detokenize of those ids (remove_special = false,
//                unparse_special = parse_special)
//
// The model is loaded vocabulary-only. Texts travel as JavaScript strings, so they must be
// valid UTF-8 (node-llama-cpp has no way to pass other bytes).
import fs from "node:fs";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const [modelPath, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node llama_tokenize.mjs MODEL.gguf INPUT_JSON OUTPUT_JSON");
  process.exit(2);
}

async function main() {
  const cases = JSON.parse(fs.readFileSync(inputPath, "utf8"));
  const llama = await getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
  });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0, vocabOnly: true });
  const out = cases.map((c) => {
    const ids = model.tokenize(c.text, c.parse_special);
    return { ids, text: model.detokenize(ids, c.parse_special) };
  });
  fs.writeFileSync(outputPath, JSON.stringify(out));
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => {
  process.stderr.write(`llama_tokenize: ${e?.stack ?? e}\n`);
  process.exit(1);
});
