// Client helpers shared by the bench scripts that talk to `fulgur serve` (serve_bench.mjs,
// serve_soak.mjs): a server-sent-events reader and percentiles.

// The events of an SSE body (any async iterable of byte chunks: a fetch body, an
// http.IncomingMessage), each as its JSON object; "[DONE]" for the end marker. Lines that are not
// `data: ` events (comments, keep-alives) are skipped.
export async function* sse_events(body) {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const part of body) {
    buf += decoder.decode(part, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      if (!ev.startsWith("data: ")) continue;
      yield ev === "data: [DONE]" ? "[DONE]" : JSON.parse(ev.slice(6));
    }
  }
}

// Median, 90th percentile and maximum of a list of numbers (null ones when it is empty).
export function percentiles(xs) {
  if (xs.length === 0) return { median: null, p90: null, max: null };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: at(0.5), p90: at(0.9), max: s[s.length - 1] };
}
