// Drives the chat page of a running `fulgur serve` in headless Chromium over the DevTools
// protocol (Node's WebSocket, no npm package): opens /?q=TEXT (the page sends TEXT at once),
// waits in real time until the streamed reply is marked done in the DOM, prints what the page
// shows as JSON, and optionally saves a screenshot.
//
//   node --experimental-websocket chat_page_check.mjs URL [--screenshot out.png] [--size 1100x560]
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, ...rest] = process.argv.slice(2);
let screenshot = "", size = "1100,560";
for (let i = 0; i < rest.length; ++i) {
  if (rest[i] === "--screenshot") screenshot = rest[++i];
  else if (rest[i] === "--size") size = rest[++i].replace("x", ",");
}
const profile = mkdtempSync(join(tmpdir(), "fulgur-chromium-"));
// The flags that work on a machine with no network (machines/cpp.md, "Known to work").
const chromium = spawn("/usr/bin/chromium", [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
  `--user-data-dir=${profile}`, `--window-size=${size}`, "--remote-debugging-port=0", "about:blank",
], { stdio: ["ignore", "ignore", "pipe"] });
const deadline = setTimeout(() => { console.error("timed out"); chromium.kill(); process.exit(3); }, 90_000);

const wsUrl = await new Promise((resolve, reject) => {
  let err = "";
  chromium.stderr.on("data", (d) => {
    err += d;
    const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
    if (m) resolve(m[1]);
  });
  chromium.on("exit", () => reject(new Error("chromium exited: " + err)));
});
const ws = new WebSocket(wsUrl);
await new Promise((r) => ws.addEventListener("open", r, { once: true }));
let nextId = 1;
const pending = new Map();
ws.addEventListener("message", (e) => {
  const m = JSON.parse(e.data);
  if (m.id && pending.has(m.id)) {
    const { resolve, reject } = pending.get(m.id);
    pending.delete(m.id);
    m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result);
  }
});
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = nextId++;
  pending.set(id, { resolve, reject });
  ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
});

const { targetId } = await send("Target.createTarget", { url });
const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
const evaluate = async (expression) =>
  (await send("Runtime.evaluate", { expression, returnByValue: true }, sessionId)).result.value;

let state = "";
for (let i = 0; i < 600 && !["1", "error"].includes(state); ++i) {
  await new Promise((r) => setTimeout(r, 100));
  state = (await evaluate("document.querySelector('.msg.assistant')?.dataset.done ?? ''")) || "";
}
const seen = await evaluate(`JSON.stringify({
  done: document.querySelector('.msg.assistant')?.dataset.done ?? '',
  user: document.querySelector('.msg.user')?.textContent ?? '',
  reply: document.querySelector('.msg.assistant')?.textContent ?? '',
  stats: document.querySelector('.stats')?.textContent ?? '',
  calls: document.querySelector('.calls')?.textContent ?? '',
})`);
if (screenshot) {
  const { data } = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  writeFileSync(screenshot, Buffer.from(data, "base64"));
}
const exited = new Promise((r) => chromium.once("exit", r));
await send("Browser.close").catch(() => {});
chromium.kill();
await exited;
clearTimeout(deadline);
try {
  rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
} catch {
  // a profile file still being written as the browser went away: a temporary folder left over
}
console.log(seen);
