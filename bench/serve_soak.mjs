#!/usr/bin/env node
// A soak of `fulgur serve` under client faults, for bench/serve_soak.sh (which starts the server):
//
//   node bench/serve_soak.mjs --url http://127.0.0.1:PORT --pid SERVER_PID --fulgur build/fulgur
//       --model M.gguf [--minutes 30] [--clients 64] [--seed 1] [-t 2] [--prompts 16]
//       [--request-timeout 600]
//
// The server must run with --ignore-eos (every reply is max_tokens long, so a reply's text is a
// function of its prompt and max_tokens alone) and with room in its queue for every client.
//
// Cases: --prompts seeded pseudo-random prompts (code-like and prose, 5-90 tokens), each through
// /v1/completions and /v1/chat/completions (one user message), each of those with two seeded
// max_tokens in 8..64: 4 x --prompts cases. Reference answers, computed once per case before the
// load: `fulgur run -f PROMPT -n MAX_TOKENS --temp 0 --ignore-eos` for completions, the same with
// `--chat` (the GGUF's template, one user turn, add_generation_prompt) for chat. Every case is then
// also sent to the server alone, before the load and again after it, and must give the same text:
// that checks the chat reference against the server's own template rendering, and that the
// server still serves correctly after the faults.
//
// Load: --clients loops, each issuing requests back to back until --minutes have passed, each
// request a seeded-random case, greedy (temperature 0) with a seeded per-request seed. 60 % of
// requests stream. Faults, drawn per request:
//   streamed:     15 % cancel (AbortController, after 0-2 s), 20 % disconnect (the socket is
//                 destroyed after k = 1..max_tokens/2 events), 20 % slow reader (a 50-300 ms sleep
//                 after every event), 45 % normal;
//   non-streamed: 20 % cancel (after 0-2 s), 80 % normal.
// A cancel whose timer fires after the reply has ended, or a disconnect whose stream ends first,
// counts as completed and is checked like any other.
//
// Criteria (each in "criteria" of the summary; the exit status is 1 when one fails):
//   no_failures:   no HTTP or network error, malformed reply or timeout (--request-timeout s) on
//                  any request that was not deliberately cancelled or disconnected;
//   no_mismatches: every completed reply (load, alone before, alone after) has exactly the
//                  reference text, max_tokens completion tokens and finish_reason "length";
//   rss_flat:      the server's VmRSS (sampled every 2 s) never exceeds its value at the end of the
//                  warm-up by more than 5 %; warm-up: the first 20 % of the run or 2 minutes,
//                  whichever is shorter;
//   slots_free:    once the clients stop, /metrics shows no busy slot and no queued request
//                  within 30 s (no slot leaked by a fault);
//   server_alive:  the server process still runs at the end; /metrics counts no failed request;
//   faults_exercised: some requests were cancelled, disconnected and read slowly.
// Prints one JSON summary.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { percentiles, sse_events } from "./serve_client.mjs";

function parse_args(argv) {
  const o = { url: "", pid: 0, fulgur: "build/fulgur", model: "", minutes: 30, clients: 64, seed: 1, t: 2,
              prompts: 16, request_timeout: 600 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === "--url") o.url = next();
    else if (a === "--pid") o.pid = Number(next());
    else if (a === "--fulgur") o.fulgur = next();
    else if (a === "--model") o.model = next();
    else if (a === "--minutes") o.minutes = Number(next());
    else if (a === "--clients") o.clients = Number(next());
    else if (a === "--seed") o.seed = Number(next());
    else if (a === "-t") o.t = Number(next());
    else if (a === "--prompts") o.prompts = Number(next());
    else if (a === "--request-timeout") o.request_timeout = Number(next());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.url || !o.pid || !o.model) throw new Error("--url, --pid and --model are required");
  return o;
}

// A seeded generator of floats in [0, 1) (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = (rnd, xs) => xs[Math.floor(rnd() * xs.length)];
const between = (rnd, lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));  // an integer in [lo, hi]

const WORDS = ("the a server client request stream token model cache slot queue memory reply prompt batch " +
               "river mountain light window garden letter number market winter engine paper music silver " +
               "quickly slowly always never carefully often together far near under over before after").split(" ");
const NAMES = ["add", "scale", "merge", "parse", "render", "count", "fold", "split"];

// Prompt i of the seeded set: a small function or a few sentences of words.
function make_prompt(rnd, i) {
  if (i % 2 === 0) {
    const name = pick(rnd, NAMES) + i;
    const lines = [`def ${name}(x, y):`];
    for (let k = between(rnd, 1, 6); k > 0; --k) lines.push(`    x = x * ${between(rnd, 2, 99)} + y  # ${pick(rnd, WORDS)}`);
    lines.push("    return");
    return lines.join("\n");
  }
  const sentences = [];
  for (let k = between(rnd, 1, 5); k > 0; --k) {
    const words = Array.from({ length: between(rnd, 3, 14) }, () => pick(rnd, WORDS));
    sentences.push(words[0][0].toUpperCase() + words.join(" ").slice(1) + ".");
  }
  return sentences.join(" ");
}

function make_cases(o) {
  const rnd = rng(o.seed);
  const cases = [];
  for (let i = 0; i < o.prompts; ++i) {
    const prompt = make_prompt(rnd, i);
    for (const endpoint of ["completion", "chat"]) {
      const n1 = between(rnd, 8, 64);
      let n2 = between(rnd, 8, 64);
      if (n2 === n1) n2 = n1 === 64 ? 8 : n1 + 1;
      for (const max_tokens of [n1, n2]) cases.push({ id: cases.length, prompt, endpoint, max_tokens, want: null });
    }
  }
  return cases;
}

// `fulgur run` on each case: the reference text.
function run_references(o, cases) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fulgur-soak-"));
  try {
    for (const c of cases) {
      const file = path.join(dir, `prompt${c.id}.txt`);
      fs.writeFileSync(file, c.prompt);
      const args = ["run", "-m", o.model, "-f", file, "-n", String(c.max_tokens), "--temp", "0", "-t", String(o.t),
                    "--ignore-eos", "--json"];
      if (c.endpoint === "chat") args.push("--chat");
      const out = execFileSync(o.fulgur, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      const j = JSON.parse(out);
      if (j.tokens.length !== c.max_tokens) throw new Error(`fulgur run gave ${j.tokens.length} tokens for case ${c.id}`);
      c.want = j.text;
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

function http_get(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

function post(url, body, signal) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent, signal, headers: { "Content-Type": "application/json" } },
                             (res) => resolve({ req, res }));
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function read_all(res) {
  let body = "";
  res.setEncoding("utf8");
  for await (const d of res) body += d;
  return body;
}

// One request of case c. fault: normal | cancel | disconnect | slow. Returns
// { outcome: "completed" | "cancelled" | "disconnected" | "failed", text, tokens, finish, error, ms }.
async function request(o, c, { stream, fault, seed, cancel_ms, disconnect_after, slow_ms }) {
  const body = { max_tokens: c.max_tokens, temperature: 0, seed, stream };
  if (c.endpoint === "completion") body.prompt = c.prompt;
  else body.messages = [{ role: "user", content: c.prompt }];
  if (stream) body.stream_options = { include_usage: true };
  const url = `${o.url}${c.endpoint === "completion" ? "/v1/completions" : "/v1/chat/completions"}`;
  const ac = new AbortController();
  let cancelled = false, timed_out = false;
  const cancel_timer = fault === "cancel" ? setTimeout(() => { cancelled = true; ac.abort(); }, cancel_ms) : null;
  const hang_timer = setTimeout(() => { timed_out = true; ac.abort(); }, o.request_timeout * 1e3);
  const t0 = performance.now();
  const done = (r) => ({ ms: performance.now() - t0, ...r });
  try {
    const { req, res } = await post(url, body, ac.signal);
    if (res.statusCode !== 200) {
      const text = await read_all(res);
      return done({ outcome: "failed", error: `HTTP ${res.statusCode}: ${text.slice(0, 300)}` });
    }
    if (!stream) {
      const j = JSON.parse(await read_all(res));
      const ch = j.choices?.[0];
      const text = c.endpoint === "completion" ? ch?.text : ch?.message?.content;
      if (typeof text !== "string") return done({ outcome: "failed", error: `no text in ${JSON.stringify(j).slice(0, 300)}` });
      return done({ outcome: "completed", text, tokens: j.usage?.completion_tokens, finish: ch.finish_reason });
    }
    let text = "", tokens = null, finish = null, events = 0, ended = false;
    for await (const ev of sse_events(res)) {
      if (ev === "[DONE]") {
        ended = true;
        break;
      }
      if (ev.error) return done({ outcome: "failed", error: `error event: ${JSON.stringify(ev.error).slice(0, 300)}` });
      if (ev.usage) tokens = ev.usage.completion_tokens;
      const ch = ev.choices?.[0];
      if (ch) {
        text += (c.endpoint === "completion" ? ch.text : ch.delta?.content) ?? "";
        finish = ch.finish_reason ?? finish;
      }
      ++events;
      if (fault === "disconnect" && events >= disconnect_after) {
        req.destroy();  // the socket goes, mid-stream
        return done({ outcome: "disconnected" });
      }
      if (fault === "slow") await sleep(slow_ms());
    }
    if (!ended) {
      if (cancelled) return done({ outcome: "cancelled" });
      return done({ outcome: "failed", error: timed_out ? "timed out" : "stream ended without [DONE]" });
    }
    return done({ outcome: "completed", text, tokens, finish });
  } catch (e) {
    if (cancelled) return done({ outcome: "cancelled" });
    return done({ outcome: "failed", error: timed_out ? `timed out after ${o.request_timeout} s` : `${e.code ?? e.name}: ${e.message}` });
  } finally {
    clearTimeout(cancel_timer);
    clearTimeout(hang_timer);
  }
}

// A completed reply against its case's reference: null when right, else what differs.
function check(c, r) {
  const problems = [];
  if (r.text !== c.want) problems.push("text");
  if (r.tokens !== c.max_tokens) problems.push(`completion_tokens ${r.tokens}`);
  if (r.finish !== "length") problems.push(`finish_reason ${r.finish}`);
  return problems.length === 0 ? null : problems.join(", ");
}

function read_rss_kib(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// /metrics as { "name{labels}": value }; null when the server has none.
async function metrics(o) {
  try {
    const r = await http_get(`${o.url}/metrics`);
    if (r.status !== 200) return null;
    const m = {};
    for (const line of r.body.split("\n")) {
      if (!line || line.startsWith("#")) continue;
      const sp = line.lastIndexOf(" ");
      m[line.slice(0, sp)] = Number(line.slice(sp + 1));
    }
    return m;
  } catch {
    return null;
  }
}

const o = parse_args(process.argv.slice(2));
const t_setup = performance.now();
const cases = make_cases(o);
run_references(o, cases);
const reference_s = (performance.now() - t_setup) / 1e3;

// Counted; the first few kept to show.
const failures = { count: 0, first: [] }, mismatches = { count: 0, first: [] };
const note = (list, n_kept, x) => {
  if (++list.count <= n_kept) list.first.push(x);
};
const note_failure = (where, c, r) => note(failures, 5, { where, case: c.id, endpoint: c.endpoint, error: r.error });
const note_mismatch = (where, c, r, stream, fault, why) =>
  note(mismatches, 3, { where, case: c.id, endpoint: c.endpoint, max_tokens: c.max_tokens, stream, fault, why,
                        got: r.text, want: c.want });

// Every case alone, alternating non-streamed and streamed: before the load (the references
// against the server's own rendering) and after it (the server still serves correctly).
async function alone(where) {
  let ok = 0;
  for (const c of cases) {
    const stream = c.id % 2 === 1;
    const r = await request(o, c, { stream, fault: "normal", seed: c.id });
    if (r.outcome !== "completed") note_failure(where, c, r);
    else if (check(c, r)) note_mismatch(where, c, r, stream, "normal", check(c, r));
    else ++ok;
  }
  return { checked: cases.length, ok };
}

const before = await alone("alone_before");
const metrics_start = await metrics(o);

// The load.
const ms = o.minutes * 60e3;
const warmup_ms = Math.min(0.2 * ms, 120e3);
const t_start = performance.now();
const deadline = t_start + ms;
const count = { total: 0, completed: 0, cancelled: 0, disconnected: 0, failed: 0, slow: 0, cancel_late: 0,
                disconnect_late: 0, streamed: 0, chat: 0 };
const latency = [];  // ms of completed normal requests
let tokens_completed = 0;

async function client(ci) {
  const rnd = rng(o.seed * 7919 + ci + 1);
  while (!server_gone && performance.now() < deadline) {
    const c = pick(rnd, cases);
    const stream = rnd() < 0.6;
    const f = rnd();
    const fault = stream ? (f < 0.15 ? "cancel" : f < 0.35 ? "disconnect" : f < 0.55 ? "slow" : "normal")
                         : (f < 0.2 ? "cancel" : "normal");
    const opts = { stream, fault, seed: Math.floor(rnd() * 2 ** 31), cancel_ms: rnd() * 2000,
                   disconnect_after: between(rnd, 1, Math.max(1, c.max_tokens >> 1)), slow_ms: () => 50 + rnd() * 250 };
    const r = await request(o, c, opts);
    ++count.total;
    if (stream) ++count.streamed;
    if (c.endpoint === "chat") ++count.chat;
    ++count[r.outcome];
    if (r.outcome === "failed") note_failure("load", c, r);
    if (r.outcome !== "completed") continue;
    if (fault === "slow") ++count.slow;
    if (fault === "cancel") ++count.cancel_late;
    if (fault === "disconnect") ++count.disconnect_late;
    if (fault === "normal") latency.push(r.ms);
    tokens_completed += r.tokens ?? 0;
    const why = check(c, r);
    if (why) note_mismatch("load", c, r, stream, fault, why);
  }
}

// Samplers: RSS every 2 s (the load stops early when the server process is gone), /metrics every
// 10 s.
const rss = [];  // [seconds since the start, KiB]
let sampling = true, server_gone = false;
const rss_sampler = (async () => {
  while (sampling) {
    const kib = read_rss_kib(o.pid);
    if (kib !== null) rss.push([(performance.now() - t_start) / 1e3, kib]);
    else server_gone = true;
    await sleep(2000);
  }
})();
const peak = { queue: 0, busy: 0, cache_bytes: 0 };
const heap = [];  // [seconds since the start, bytes the allocator has handed out]: beside the RSS,
                  // a leak grows both, fragmentation only the RSS
const metrics_sampler = (async () => {
  while (sampling) {
    const m = await metrics(o);
    if (m) {
      if (m.fulgur_heap_in_use_bytes !== undefined) heap.push([(performance.now() - t_start) / 1e3, m.fulgur_heap_in_use_bytes]);
      peak.queue = Math.max(peak.queue, m.fulgur_queue_length ?? 0);
      peak.busy = Math.max(peak.busy, m.fulgur_slots_busy ?? 0);
      peak.cache_bytes = Math.max(peak.cache_bytes, m.fulgur_prompt_cache_bytes ?? 0);
    }
    await sleep(10000);
  }
})();

await Promise.all(Array.from({ length: o.clients }, (_, ci) => client(ci)));
const load_s = (performance.now() - t_start) / 1e3;

// The clients have stopped: every slot must come free.
let m_end = null, settle_s = null;
const t_settle = performance.now();
while (performance.now() - t_settle < 30e3) {
  m_end = await metrics(o);
  if (m_end && m_end.fulgur_slots_busy === 0 && m_end.fulgur_queue_length === 0) {
    settle_s = (performance.now() - t_settle) / 1e3;
    break;
  }
  await sleep(500);
}
const after = await alone("alone_after");
sampling = false;
await Promise.all([rss_sampler, metrics_sampler]);
const metrics_end = await metrics(o);
let alive = true;
try {
  process.kill(o.pid, 0);
} catch {
  alive = false;
}

// RSS: the sample at the end of the warm-up, and the most after it.
const mib = (kib) => Math.round(kib / 102.4) / 10;
const warm = rss.find(([t]) => t >= warmup_ms / 1e3) ?? rss[rss.length - 1];
const post_warm = rss.filter(([t]) => t >= warmup_ms / 1e3).map(([, k]) => k);
const all_kib = rss.map(([, k]) => k);
const max_after = post_warm.length ? Math.max(...post_warm) : null;
const rss_growth = warm && max_after !== null ? (max_after / warm[1] - 1) * 100 : null;
const series = [];  // one sample a minute
for (const [t, k] of rss) if (series.length === 0 || t >= series.length * 60) series.push([Math.round(t), mib(k)]);

// The allocator's bytes in use, as the RSS above: at the end of the warm-up, the most after it,
// the last, and one sample a minute.
function heap_summary() {
  if (heap.length === 0) return null;
  const mb = (b) => Math.round(b / 104857.6) / 10;
  const warm_h = heap.find(([t]) => t >= warmup_ms / 1e3) ?? heap[heap.length - 1];
  const after = heap.filter(([t]) => t >= warmup_ms / 1e3).map(([, b]) => b);
  const per_minute = [];
  for (const [t, b] of heap) if (per_minute.length === 0 || t >= per_minute.length * 60) per_minute.push([Math.round(t), mb(b)]);
  return { samples: heap.length, at_warmup: mb(warm_h[1]), max_after_warmup: after.length ? mb(Math.max(...after)) : null,
           last: mb(heap[heap.length - 1][1]),
           growth_after_warmup_pct: after.length ? (Math.max(...after) / warm_h[1] - 1) * 100 : null, per_minute };
}

const delta = (name) => metrics_start && metrics_end ? (metrics_end[name] ?? 0) - (metrics_start[name] ?? 0) : null;
const outcome = (x) => delta(`fulgur_requests_total{outcome="${x}"}`);
const summary = {
  model: o.model, clients: o.clients, minutes: o.minutes, seed: o.seed, cases: cases.length,
  references: { completions: "fulgur run --temp 0 --ignore-eos", chat: "fulgur run --chat --temp 0 --ignore-eos",
                seconds: Math.round(reference_s * 10) / 10, alone_before: before, alone_after: after },
  duration_s: Math.round(load_s * 10) / 10,
  requests: count,
  throughput: { requests_per_s: count.total / load_s, completed_per_s: count.completed / load_s,
                completed_tokens_per_s: tokens_completed / load_s },
  latency_ms_normal: percentiles(latency),
  failures,
  mismatches,
  rss_mib: { samples: rss.length, warmup_s: warmup_ms / 1e3, first: rss.length ? mib(all_kib[0]) : null,
             at_warmup: warm ? mib(warm[1]) : null, min: rss.length ? mib(Math.min(...all_kib)) : null,
             max: rss.length ? mib(Math.max(...all_kib)) : null, max_after_warmup: max_after !== null ? mib(max_after) : null,
             last: rss.length ? mib(all_kib[all_kib.length - 1]) : null,
             growth_after_warmup_pct: rss_growth, limit_pct: 5, per_minute: series },
  heap_in_use_mib: heap_summary(),
  metrics: metrics_end ? {
    requests: { finished: outcome("finished"), cancelled: outcome("cancelled"), failed: outcome("failed"),
                rejected: outcome("rejected"), bad: outcome("bad") },
    generated_tokens: delta("fulgur_generated_tokens_total"),
    prompt_tokens: delta("fulgur_prompt_tokens_total"), prompt_tokens_reused: delta("fulgur_prompt_tokens_reused_total"),
    prompt_cache: { bytes_end: metrics_end.fulgur_prompt_cache_bytes, bytes_peak: peak.cache_bytes,
                    entries_end: metrics_end.fulgur_prompt_cache_entries, loads: delta("fulgur_prompt_cache_loads_total") },
    peak_queue: peak.queue, peak_slots_busy: peak.busy, slots: metrics_end.fulgur_slots,
    slots_busy_after_load: m_end?.fulgur_slots_busy ?? null, settle_s,
  } : null,
};
summary.criteria = {
  no_failures: failures.count === 0,
  no_mismatches: mismatches.count === 0,
  rss_flat: !server_gone && rss_growth !== null && rss_growth <= 5,
  slots_free: settle_s !== null,
  server_alive: alive && metrics_end !== null && (outcome("failed") ?? 0) === 0,
  faults_exercised: count.cancelled > 0 && count.disconnected > 0 && count.slow > 0,
};
summary.ok = Object.values(summary.criteria).every(Boolean);
console.log(JSON.stringify(summary, null, 2));
process.exit(summary.ok ? 0 : 1);
