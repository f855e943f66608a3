// Tool calls through `fulgur serve` over HTTP. A random-weight model never writes a tool call,
// so these runs use `--scripted-reply` (a test-only option): every reply is the script's tokens
// in place of the model's choices (the model still runs), and Qwen3's published chat template
// (`--chat-template-file`). What they check is therefore everything after generation: the
// reply read into content and tool calls, the OpenAI shapes non-streamed and streamed (the
// script's byte-level tokens split the tags at every token), finish_reason, tool_choice "none",
// a reply cut by max_tokens. Whether a real model writes good calls is not tested here.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "model/model_fixture.h"
#include "serve_process.h"
#include "sse.h"

namespace fulgur {
namespace {

using nlohmann::json;
using test::ServeProcess;

const std::string kScript =
    "I will check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}])");

// A server whose every reply is `script`, with the published template of the given fixture.
std::string scripted_args(const std::string& script = kScript, const std::string& tmpl = "qwen3_chat_template.jinja") {
  const std::string path = test::make_cli_temp_dir() + "/tool_call_script.txt";
  std::ofstream(path, std::ios::binary) << script;
  return "-m " + testing_support::tiny_model("qwen3", DType::kQ8_0, 1) + " -t 1 -c 1024 --parallel 2" +
         " --chat-template-file " + FULGUR_SOURCE_DIR + "/tests/jinja/fixtures/" + tmpl + " --scripted-reply " + path;
}

json request(json extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"temperature", 0}, {"tools", kTools}};
  body.update(extra);
  return body;
}

TEST(ServeTools, AScriptedToolCallComesBackAsOpenAiToolCalls) {
  ServeProcess s(scripted_args());
  ASSERT_TRUE(s.ok());
  auto res = s.client().Post("/v1/chat/completions", request(json::object()).dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  const json& choice = reply["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "I will check.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << reply.dump();
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["function"]["arguments"], R"({"city":"Paris","days":2})");
  // Every scripted token was counted as generated.
  EXPECT_GT(reply["usage"]["completion_tokens"].get<int>(), 20);

  // Streamed: the same content and call, the call as OpenAI's indexed deltas.
  auto streamed = s.client().Post("/v1/chat/completions", request({{"stream", true}}).dump(), "application/json");
  ASSERT_TRUE(streamed);
  const test::StreamedReply r = test::read_sse(streamed->body);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.text, "I will check.");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  std::map<int, json> calls;  // index -> the call joined from its deltas
  for (const json& e : r.events) {
    for (const json& c : e["choices"]) {
      if (!c["delta"].contains("tool_calls")) continue;
      for (const json& d : c["delta"]["tool_calls"]) {
        json& joined = calls[d["index"].get<int>()];
        if (d.contains("id")) joined["id"] = d["id"];
        if (d["function"].contains("name")) joined["name"] = d["function"]["name"];
        joined["arguments"] = joined.value("arguments", "") + d["function"]["arguments"].get<std::string>();
      }
    }
  }
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["name"], "get_weather");
  EXPECT_EQ(calls[0]["arguments"], R"({"city":"Paris","days":2})");
  EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);
}

TEST(ServeTools, ToolChoiceNoneAndACutReplyAreContent) {
  ServeProcess s(scripted_args());
  ASSERT_TRUE(s.ok());
  // tool_choice "none": the reply is not read for calls (llama-server's behaviour).
  auto none = s.client().Post("/v1/chat/completions", request({{"tool_choice", "none"}}).dump(), "application/json");
  ASSERT_TRUE(none);
  const json n = json::parse(none->body);
  EXPECT_EQ(n["choices"][0]["message"]["content"], kScript);
  EXPECT_FALSE(n["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(n["choices"][0]["finish_reason"], "stop");
  // Cut by max_tokens inside the call: what was written is content, finish_reason "length".
  auto cut = s.client().Post("/v1/chat/completions", request({{"max_tokens", 30}}).dump(), "application/json");
  ASSERT_TRUE(cut);
  const json c = json::parse(cut->body);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(c["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(kScript.rfind(c["choices"][0]["message"]["content"].get<std::string>(), 0), 0u) << c.dump();
  EXPECT_NE(c["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>"), std::string::npos);
}

// Gemma 4's template: its calls (`<|tool_call>call:NAME{...}<tool_call|>`, its own value
// syntax) come back as OpenAI tool calls with JSON arguments.
TEST(ServeTools, Gemma4sCallsComeBackAsOpenAiToolCalls) {
  const std::string script =
      "Checking.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2}<tool_call|>"
      "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>,days:1}<tool_call|>";
  ServeProcess s(scripted_args(script, "gemma4_chat_template.jinja"));
  ASSERT_TRUE(s.ok());
  auto res = s.client().Post("/v1/chat/completions", request(json::object()).dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json choice = json::parse(res->body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Checking.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 2u) << choice.dump();
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris","days":2})");
  EXPECT_EQ(choice["message"]["tool_calls"][1]["function"]["arguments"], R"({"city":"Oslo","days":1})");
}

}  // namespace
}  // namespace fulgur
