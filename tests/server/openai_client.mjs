// The official `openai` npm client (pinned in package.json) against a running `fulgur serve`:
// models, chat, streaming chat, completions, structured output (json_schema), logprobs with and
// without the server's drafter, an error case and the API key. Usage:
//   node openai_client.mjs PORT KEY        (the server runs with --api-key KEY)
// Prints one JSON line of what it saw; exits non-zero on the first failed check.
import assert from "node:assert/strict";
import OpenAI from "openai";

const [port, key] = process.argv.slice(2);
const baseURL = `http://127.0.0.1:${port}/v1`;
const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
const seen = {};

const models = await client.models.list();
assert.equal(models.data.length, 1);
const model = models.data[0].id;
seen.model = model;

const chat = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "def add(a, b):" }], max_tokens: 8, temperature: 0,
});
assert.equal(chat.object, "chat.completion");
assert.equal(chat.choices[0].message.role, "assistant");
assert.equal(typeof chat.choices[0].message.content, "string");
assert.ok(["stop", "length"].includes(chat.choices[0].finish_reason));
assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);
seen.chat = chat.choices[0].message.content;

const stream = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "def add(a, b):" }], max_tokens: 8, temperature: 0,
  stream: true, stream_options: { include_usage: true },
});
let streamed = "", finish = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  ++chunks;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed += c.delta?.content ?? "";
    finish = c.finish_reason ?? finish;
  }
}
assert.equal(streamed, chat.choices[0].message.content, "streamed and non-streamed greedy replies differ");
assert.equal(finish, chat.choices[0].finish_reason);
assert.equal(usage.completion_tokens, chat.usage.completion_tokens);
seen.stream_chunks = chunks;

const cmpl = await client.completions.create({ model, prompt: "import os\n", max_tokens: 5, temperature: 0 });
assert.equal(cmpl.object, "text_completion");
assert.equal(typeof cmpl.choices[0].text, "string");
assert.equal(cmpl.usage.completion_tokens <= 5, true);
seen.completion = cmpl.choices[0].text;

// Structured output: the reply parses and has the schema's keys and types, even from a
// random-weight model (the grammar masks the target and cuts the n-gram drafts).
const schema = {
  type: "object", additionalProperties: false, required: ["ok", "n", "tag"],
  properties: { ok: { type: "boolean" }, n: { enum: [1, 2, 3] }, tag: { type: "string", maxLength: 8 } },
};
const structured = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "Answer in JSON." }], max_tokens: 200, temperature: 0,
  response_format: { type: "json_schema", json_schema: { name: "answer", schema, strict: true } },
});
const doc = JSON.parse(structured.choices[0].message.content);
assert.deepEqual(Object.keys(doc), ["ok", "n", "tag"]);
assert.equal(typeof doc.ok, "boolean");
assert.ok([1, 2, 3].includes(doc.n));
assert.equal(typeof doc.tag, "string");
seen.structured = doc;

// logprobs are the target's: the same with the server's drafter and without it (fulgur's
// per-request "speculative": false, passed through by the client).
const lpRequest = {
  model, messages: [{ role: "user", content: "def add(a, b):" }], max_tokens: 40, temperature: 0,
  logprobs: true, top_logprobs: 3,
};
const drafted = await client.chat.completions.create(lpRequest);
const plain = await client.chat.completions.create({ ...lpRequest, speculative: false });
const lp = (r) => r.choices[0].logprobs.content;
assert.equal(lp(drafted).length, drafted.usage.completion_tokens);
assert.equal(lp(plain).length, lp(drafted).length);
for (let i = 0; i < lp(plain).length; ++i) {
  const a = lp(drafted)[i], b = lp(plain)[i];
  assert.equal(a.token, b.token);
  assert.ok(Math.abs(a.logprob - b.logprob) < 1e-4, `token ${i}: ${a.logprob} vs ${b.logprob}`);
  assert.equal(a.top_logprobs.length, 3);
  assert.deepEqual(a.top_logprobs.map((t) => t.token), b.top_logprobs.map((t) => t.token));
}
assert.ok(drafted.timings.draft_n > 0, "the n-gram drafter drafted nothing");
seen.logprobs = lp(plain).length;

// A bad request surfaces as the client's BadRequestError with the field named.
await assert.rejects(
  client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], max_tokens: -5 }),
  (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "max_tokens" &&
         /max_tokens/.test(e.message));

// The wrong key is an AuthenticationError.
const intruder = new OpenAI({ baseURL, apiKey: key + "-wrong", maxRetries: 0 });
await assert.rejects(intruder.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
seen.ok = true;
console.log(JSON.stringify(seen));
