#!/usr/bin/env node
// Aggregate generation throughput with N concurrent streams, for bench/serve_bench.sh:
//
//   node bench/serve_bench.mjs fulgur --url http://127.0.0.1:PORT --streams N [-p 64] [-n 64] [--requests 2]
//       N clients stream /v1/completions at once (a token-id prompt of -p random ids each, -n
//       tokens, greedy; the server runs with --ignore-eos so every reply has -n tokens), each
//       `requests` requests one after another.
//   node bench/serve_bench.mjs llama --model M.gguf --streams N [-p 64] [-n 64] [-t 2] [--requests 2]
//       llama.cpp (node-llama-cpp's prebuilt CPU build) decoding N sequences of one context at
//       once (node-llama-cpp batches the sequences' pending evaluations into one decode), the
//       same prompts and lengths.
//
// Prints one JSON object: tokens (generated), seconds (wall, first request to last token),
// tok_s (aggregate), ttft_ms {median, p90, max} (time from sending a request / starting a
// sequence to its first generated token: under load, with the other streams decoding).
import { performance } from "node:perf_hooks";
import { percentiles, sse_events } from "./serve_client.mjs";

function parse_args(argv) {
  const o = { engine: argv[0], url: "", model: "", streams: 1, p: 64, n: 64, t: 2, requests: 2, vocab: 4096 };
  for (let i = 1; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === "--url") o.url = next();
    else if (a === "--model") o.model = next();
    else if (a === "--streams") o.streams = Number(next());
    else if (a === "-p") o.p = Number(next());
    else if (a === "-n") o.n = Number(next());
    else if (a === "-t") o.t = Number(next());
    else if (a === "--requests") o.requests = Number(next());
    else if (a === "--vocab") o.vocab = Number(next());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!["fulgur", "llama"].includes(o.engine)) throw new Error("first argument: fulgur or llama");
  return o;
}

// Fixed pseudo-random token ids (a 32-bit LCG), a different prompt per stream and round.
function prompt(stream, round, p, vocab) {
  let x = (stream * 7919 + round * 104729 + 1) >>> 0;
  const ids = [];
  for (let i = 0; i < p; ++i) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    ids.push(256 + (x % (vocab - 512)));  // ordinary tokens, clear of bytes and specials
  }
  return ids;
}

async function fulgur(o) {
  const ttft = [];
  let tokens = 0;
  const one = async (stream, round) => {
    const t0 = performance.now();
    const res = await fetch(`${o.url}/v1/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ prompt: prompt(stream, round, o.p, o.vocab), max_tokens: o.n, temperature: 0,
                             stream: true, stream_options: { include_usage: true } }),
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    let first = true;
    for await (const j of sse_events(res.body)) {
      if (j === "[DONE]") continue;
      if (j.usage) tokens += j.usage.completion_tokens;
      if (first && j.choices?.[0]?.text) {
        first = false;
        ttft.push(performance.now() - t0);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: o.streams }, async (_, s) => {
    for (let r = 0; r < o.requests; ++r) await one(s, r);
  }));
  return { tokens, seconds: (performance.now() - t0) / 1e3, ttft };
}

async function llama(o) {
  const { cpuLlama } = await import("./llama_cpu.mjs");
  const lib = await cpuLlama(o.t);
  const model = await lib.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const context = await model.createContext({
    contextSize: o.streams * (o.p + o.n + 8), sequences: o.streams, batchSize: 512,
    threads: { ideal: o.t, min: o.t },
    // Its RAM estimate refuses 64 sequences on a 24 GiB machine; the 0.6b model's real use is far below.
    ignoreMemorySafetyChecks: true,
  });
  const ttft = [];
  let tokens = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: o.streams }, async (_, s) => {
    const seq = context.getSequence();
    for (let r = 0; r < o.requests; ++r) {
      await seq.clearHistory();
      const t1 = performance.now();
      let n = 0;
      for await (const token of seq.evaluate(prompt(s, r, o.p, o.vocab), { temperature: 0 })) {
        void token;
        if (n === 0) ttft.push(performance.now() - t1);
        if (++n >= o.n) break;
      }
      tokens += n;
    }
  }));
  const seconds = (performance.now() - t0) / 1e3;
  await context.dispose();
  await model.dispose();
  return { tokens, seconds, ttft };
}

const o = parse_args(process.argv.slice(2));
const r = o.engine === "fulgur" ? await fulgur(o) : await llama(o);
console.log(JSON.stringify({ engine: o.engine, streams: o.streams, tokens: r.tokens, seconds: r.seconds,
                             tok_s: r.tokens / r.seconds, ttft_ms: percentiles(r.ttft) }));
