// The official `openai` npm client making a tool-call turn against `fulgur serve` started with
// --scripted-reply (every reply is a fixed Qwen3-format tool call, whatever the model would
// say) and Qwen3's chat template. It checks what the client makes of the server's answers: the
// non-streamed tool_calls, the streamed deltas joined by the client's own stream helper, and a
// second turn the client builds itself (runTools sends back the assistant's tool_calls and a
// tool message answering them). Usage:
//   node openai_tools_client.mjs PORT
// Prints one JSON line of what it saw; exits non-zero on the first failed check.
import assert from "node:assert/strict";
import OpenAI from "openai";

const [port] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "none", maxRetries: 0 });
const model = (await client.models.list()).data[0].id;
const tools = [{
  type: "function",
  function: {
    name: "get_weather", description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
  },
}];
const messages = [{ role: "user", content: "Weather in Paris?" }];
const expected = { city: "Paris", days: 2 };
const seen = {};

const reply = await client.chat.completions.create({ model, messages, tools, temperature: 0 });
const choice = reply.choices[0];
assert.equal(choice.finish_reason, "tool_calls");
assert.equal(choice.message.content, "I will check.");
assert.equal(choice.message.tool_calls.length, 1);
const call = choice.message.tool_calls[0];
assert.equal(call.type, "function");
assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
assert.equal(call.function.name, "get_weather");
assert.deepEqual(JSON.parse(call.function.arguments), expected);
seen.arguments = call.function.arguments;

// The client's stream helper joins the deltas into a final completion as it would OpenAI's.
const stream = client.chat.completions.stream({ model, messages, tools, temperature: 0 });
let argumentsDone = null;
stream.on("tool_calls.function.arguments.done", (e) => { argumentsDone = e; });
const final = await stream.finalChatCompletion();
const streamedCall = final.choices[0].message.tool_calls[0];
assert.equal(final.choices[0].finish_reason, "tool_calls");
assert.equal(final.choices[0].message.content, "I will check.");
assert.equal(streamedCall.function.name, "get_weather");
assert.deepEqual(JSON.parse(streamedCall.function.arguments), expected);
assert.equal(argumentsDone?.name, "get_weather");
seen.streamed_id = streamedCall.id;

// A second turn built by the client: runTools calls the function with the parsed arguments and
// sends the assistant's tool_calls and the tool's answer back (the server renders them through
// the template). The script calls the tool again, so after two completions the runner stops.
const calledWith = [];
const runner = client.chat.completions.runTools({
  model, messages, temperature: 0,
  tools: [{ type: "function", function: { ...tools[0].function, parse: JSON.parse,
                                           function: (args) => { calledWith.push(args); return { temperature_c: 18 }; } } }],
}, { maxChatCompletions: 2 });
await runner.done();
assert.deepEqual(calledWith, [expected, expected]);
const sent = runner.messages;
assert.deepEqual(sent.map((m) => m.role), ["user", "assistant", "tool", "assistant", "tool"]);
assert.equal(sent[2].tool_call_id, sent[1].tool_calls[0].id);
const completions = runner.allChatCompletions();
assert.equal(completions.length, 2);
// The second prompt held the first turn's call and result: it is longer.
assert.ok(completions[1].usage.prompt_tokens > completions[0].usage.prompt_tokens + 20,
          `prompt tokens ${completions[0].usage.prompt_tokens} then ${completions[1].usage.prompt_tokens}`);
seen.turns = completions.length;

// A malformed tool is a BadRequestError naming it.
await assert.rejects(
  client.chat.completions.create({ model, messages, tools: [{ type: "function", function: { name: "no spaces" } }] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "tools[0].function.name");
seen.ok = true;
console.log(JSON.stringify(seen));
