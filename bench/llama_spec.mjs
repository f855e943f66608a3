#!/usr/bin/env node
// llama.cpp's side of bench/zoo_spec.sh: greedy generation of N tokens from each prompt file on
// llama.cpp's prebuilt CPU build (npm node-llama-cpp), plain or with its draft-model speculation
// (node-llama-cpp's DraftSequenceTokenPredictor over a second model's sequence), timing the
// decode only: from the first generated token (the prompt and one token) to the Nth.
//
// usage: node bench/llama_spec.mjs --model T.gguf [--draft D.gguf] [--n-max 4] [-n 128] [-t 2]
//                                  PROMPT_FILE...
// Prints one JSON object: per prompt the generated token ids and decode seconds, the totals, and
// with a draft the predictor's validated / refuted counts.
import { readFileSync } from "node:fs";
import { DraftSequenceTokenPredictor } from "node-llama-cpp";
import { cpuLlama } from "./llama_cpu.mjs";

function parse_args(argv) {
  const o = { model: "", draft: "", nMax: 4, n: 128, t: 2, prompts: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--model" || a === "-m") o.model = next();
    else if (a === "--draft") o.draft = next();
    else if (a === "--n-max") o.nMax = Number(next());
    else if (a === "-n") o.n = Number(next());
    else if (a === "-t") o.t = Number(next());
    else if (a.startsWith("-")) throw new Error(`unknown argument ${a}`);
    else o.prompts.push(a);
  }
  if (!o.model || o.prompts.length === 0) throw new Error("--model and at least one prompt file are required");
  if (!(o.n >= 2 && o.t >= 1 && o.nMax >= 1)) throw new Error("-n must be >= 2, -t and --n-max >= 1");
  return o;
}

async function main() {
  const o = parse_args(process.argv.slice(2));
  const llama = await cpuLlama(o.t);
  const contextOptions = { contextSize: 2048, batchSize: 512, threads: { ideal: o.t, min: o.t }, sequences: 1 };
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const context = await model.createContext(contextOptions);
  let draftContext = null;
  if (o.draft) {
    const draftModel = await llama.loadModel({ modelPath: o.draft, gpuLayers: 0, useMmap: true });
    draftContext = await draftModel.createContext(contextOptions);
  }
  // One target sequence (and one draft sequence under the predictor) for all prompts, cleared
  // between them; the predictor's counts add up over the prompts.
  // minTokens = maxTokens = n-max and minConfidence 0: every step waits for n-max drafted tokens
  // and verifies them, as fulgur's --spec-fixed-n does (with minTokens 0 the target takes what
  // the draft has ready, often nothing; the default minConfidence 0.6 cuts drafts on the draft's
  // own probability).
  const predictor = draftContext
    ? new DraftSequenceTokenPredictor(draftContext.getSequence(), { minTokens: o.nMax, maxTokens: o.nMax, minConfidence: 0 })
    : undefined;
  const seq = context.getSequence(predictor ? { tokenPredictor: predictor } : undefined);
  const runs = [];
  for (const file of o.prompts) {
    await seq.clearHistory();
    const tokens = model.tokenize(readFileSync(file, "utf8"));
    const out = [];
    let tFirst = 0;
    for await (const token of seq.evaluate(tokens, { temperature: 0 })) {
      if (out.length === 0) tFirst = performance.now();
      out.push(token);
      if (out.length >= o.n) break;
    }
    runs.push({ prompt: file, prompt_tokens: tokens.length, tokens: out, decode_s: (performance.now() - tFirst) / 1000 });
  }
  const validated = predictor ? seq.tokenPredictions.validated : 0;
  const refuted = predictor ? seq.tokenPredictions.refuted : 0;
  const decoded = runs.reduce((s, r) => s + r.tokens.length - 1, 0);
  const decodeS = runs.reduce((s, r) => s + r.decode_s, 0);
  process.stdout.write(JSON.stringify({
    engine: "llama.cpp (node-llama-cpp 3.22.1, prebuilt CPU)", model: o.model, draft: o.draft || null,
    n_max: o.draft ? o.nMax : null, threads: o.t, runs, decoded_tokens: decoded, decode_s: decodeS,
    decode_tok_s: decoded / decodeS, validated, refuted,
  }) + "\n");
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`llama_spec: ${e.message}\n`);
  process.exit(1);
});
