#!/usr/bin/env node
// llama.cpp's side of bench/compare_llamacpp.sh: the same measurement as `fulgur bench` (one
// prefill batch of P tokens, then N tokens decoded one at a time, R repetitions, medians) on
// llama.cpp's prebuilt CPU build from npm node-llama-cpp, with a fixed thread count.
//
// usage: node bench/llama_bench.mjs --model M.gguf [-p 512] [-n 128] [-t 2] [-r 3]
//                                   [--flash-attention auto|on|off]
// Prints one JSON object: prefill_tok_s, decode_tok_s (medians), their min/max, and the
// settings. Like fulgur bench, every repetition starts from an empty KV cache, the prompt's
// last row and every decoded row compute logits (llama.cpp skips the output matrix for rows
// nobody asked logits of, so asking is what makes the work equal), token ids are fixed
// pseudo-random values, and there is no warm-up run (the first repetition pays the page faults
// of the mapped weights in both engines; the median hides them).
// Decoding goes through node-llama-cpp's controlledEvaluate, which also runs a greedy sampler over
// the row (an argmax; well under 1 ms on a 152k vocabulary, against tens of ms per token).
import { cpuLlama } from "./llama_cpu.mjs";

function parse_args(argv) {
  const o = { model: "", p: 512, n: 128, t: 2, r: 3, flashAttention: "auto" };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--model" || a === "-m") o.model = next();
    else if (a === "-p") o.p = Number(next());
    else if (a === "-n") o.n = Number(next());
    else if (a === "-t") o.t = Number(next());
    else if (a === "-r") o.r = Number(next());
    else if (a === "--flash-attention") o.flashAttention = { on: true, off: false, auto: "auto" }[next()];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model) throw new Error("--model is required");
  if (!(o.p >= 1 && o.n >= 1 && o.t >= 1 && o.r >= 1)) throw new Error("-p, -n, -t and -r must be >= 1");
  return o;
}

function stats(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length % 2 ? s[(s.length - 1) / 2] : 0.5 * (s[s.length / 2 - 1] + s[s.length / 2]);
  return { median: m, min: s[0], max: s[s.length - 1] };
}

async function main() {
  const o = parse_args(process.argv.slice(2));
  const llama = await cpuLlama(o.t);
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const context = await model.createContext({
    contextSize: o.p + o.n + 1,
    batchSize: o.p,  // the whole prompt is one batch, as in fulgur bench
    threads: { ideal: o.t, min: o.t },
    sequences: 1,
    flashAttention: o.flashAttention,
  });
  const seq = context.getSequence();
  const nVocab = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
  const ids = Array.from({ length: o.p + o.n }, (_, i) => (i * 2654435761 + 17) % nVocab);
  const want = { generateNext: { token: true, options: { temperature: 0 } } };

  const pp = [], tg = [];
  for (let rep = 0; rep < o.r; ++rep) {
    await seq.clearHistory();
    const prompt = ids.slice(0, o.p).map((t, i) => (i + 1 === o.p ? [t, want] : t));
    let t0 = performance.now();
    await seq.controlledEvaluate(prompt);
    pp.push(o.p / ((performance.now() - t0) / 1000));
    t0 = performance.now();
    for (let i = 0; i < o.n; ++i) await seq.controlledEvaluate([[ids[o.p + i], want]]);
    tg.push(o.n / ((performance.now() - t0) / 1000));
  }
  const p = stats(pp), d = stats(tg);
  process.stdout.write(JSON.stringify({
    engine: "llama.cpp (node-llama-cpp 3.22.1, prebuilt CPU)", model: o.model, threads: o.t, reps: o.r,
    flash_attention: context.flashAttention, n_prompt: o.p, n_gen: o.n,
    prefill_tok_s: p.median, prefill_tok_s_min: p.min, prefill_tok_s_max: p.max,
    decode_tok_s: d.median, decode_tok_s_min: d.min, decode_tok_s_max: d.max,
  }) + "\n");
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => {
  process.stderr.write(`llama_bench: ${e?.stack ?? e}\n`);
  process.exit(1);
});
