// The tool side of a chat request without a model: tools, tool_choice and parallel_tool_calls
// are read (malformed ones are in malformed_corpus.h), tool calls and tool results in the
// messages reach the chat template as Hugging Face's apply_chat_template passes them (checked
// on Qwen3's published template), and a template that cannot take tools, or whose call format
// is unknown, is refused with a 400 naming 'tools'.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server/chat_prompt.h"

namespace fulgur::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.n_vocab = 489;
  l.n_ctx_slot = 512;
  return l;
}

CompletionRequest chat(const std::string& body) { return parse_completion_request(body, Endpoint::kChat, limits()); }

std::string qwen3_template() {
  std::ifstream in(std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/qwen3_chat_template.jinja");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Weather now", )"
    R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})";

TEST(ToolRequest, ToolsChoiceAndParallelAreRead) {
  const CompletionRequest r = chat(R"({"messages": [{"role": "user", "content": "hi"}], "tools": [)" + kWeatherTool +
                                   R"(], "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                                       "parallel_tool_calls": false})");
  ASSERT_EQ(r.tools.tools.size(), 1u);
  // Key order as sent: the template's tojson writes them in that order.
  EXPECT_EQ(r.tools.tools[0].dump(), nlohmann::ordered_json::parse(kWeatherTool).dump());
  EXPECT_EQ(r.tools.tools[0]["function"].begin().key(), "name");
  EXPECT_EQ(r.tools.choice, ToolChoice::kFunction);
  EXPECT_EQ(r.tools.function, "get_weather");
  EXPECT_FALSE(r.tools.parallel);
  EXPECT_TRUE(r.tools.parse_calls());

  const std::string tools = R"(, "tools": [)" + kWeatherTool + "]";
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "hi"}])" + tools + "}").tools.choice, ToolChoice::kAuto);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required")" + tools + "}").tools.choice,
            ToolChoice::kRequired);
  const CompletionRequest none = chat(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none")" + tools + "}");
  EXPECT_EQ(none.tools.choice, ToolChoice::kNone);
  EXPECT_FALSE(none.tools.parse_calls());
  // No tools, or an empty list: nothing to call; "auto" and "none" need no tools.
  const CompletionRequest plain = chat(R"({"messages": [{"role": "user", "content": "hi"}], "tools": [], "tool_choice": "auto"})");
  EXPECT_FALSE(plain.tools.any());
  EXPECT_TRUE(plain.tools.parallel);
}

TEST(ToolRequest, ToolCallsAndResultsInTheMessagesAreRead) {
  const CompletionRequest r = chat(R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
          {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18 C"},
      {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "21 C"}]}]})");
  ASSERT_EQ(r.messages.size(), 4u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "");
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(r.messages[1].tool_calls[1].arguments, R"({"city":"Rome"})");  // an object is taken as its JSON
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[2].name, "get_weather");
  EXPECT_EQ(r.messages[3].content, "21 C");
}

// What Qwen3's template writes for a tool round trip when it gets HF's context: the tools as
// sent (tojson in their key order), the call's arguments as an object, the result as a user
// turn in <tool_response>. Worked out by hand from the template's text.
TEST(ToolRequest, AToolRoundTripRendersThroughQwen3sTemplate) {
  const ChatTemplate tmpl(qwen3_template());
  const CompletionRequest r = chat(R"({"tools": [)" + kWeatherTool + R"(], "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}]})");
  const std::string expected =
      "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      R"({"type": "function", "function": {"name": "get_weather", "description": "Weather now", )"
      R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})"
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n18 C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(render_chat_prompt(tmpl, r), expected);
  EXPECT_EQ(reply_tool_call_format(tmpl, r)->family, "qwen3-json");
  // Without tools the same template writes no tools block, and nothing is parsed for calls.
  const CompletionRequest plain = chat(R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(render_chat_prompt(tmpl, plain), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(reply_tool_call_format(tmpl, plain), nullptr);
}

TEST(ToolRequest, ArgumentsThatAreNotAJsonObjectReachTheTemplateAsText) {
  const ChatTemplate tmpl("{% for m in messages %}{% for c in m.tool_calls or [] %}"
                          "{{ c.function.arguments is mapping }}:{{ c.function.arguments }};{% endfor %}{% endfor %}");
  const CompletionRequest r = chat(R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"k\": [1, 2]}"}},
      {"id": "b", "type": "function", "function": {"name": "f", "arguments": "not json"}}]}]})");
  EXPECT_EQ(render_chat_prompt(tmpl, r), "True:{'k': [1, 2]};False:not json;");
}

TEST(ToolRequest, TemplatesThatCannotTakeTheToolsAreRefused) {
  const std::string tools = R"(, "tools": [{"type": "function", "function": {"name": "f"}}])";
  const CompletionRequest r = chat(R"({"messages": [{"role": "user", "content": "hi"}])" + tools + "}");
  const ChatTemplate chatml("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}");
  try {
    render_chat_prompt(chatml, r);
    ADD_FAILURE() << "a template without tools took them";
  } catch (const BadRequest& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "tools");
    EXPECT_NE(std::string(e.what()).find("no tool support"), std::string::npos) << e.what();
  }
  // tool_choice "none" asks for no call: the template renders, the reply is not parsed.
  const CompletionRequest none = chat(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none")" + tools + "}");
  EXPECT_EQ(render_chat_prompt(chatml, none), "<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(reply_tool_call_format(chatml, none), nullptr);
  // A template that takes tools but writes calls in a format not in the table.
  const ChatTemplate unknown("{% for t in tools %}{{ t.function.name }}{% endfor %}[TOOL_CALLS]");
  try {
    reply_tool_call_format(unknown, r);
    ADD_FAILURE() << "an unknown call format was accepted";
  } catch (const BadRequest& e) {
    EXPECT_EQ(e.param(), "tools");
    EXPECT_NE(std::string(e.what()).find("qwen3-json (<tool_call>)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fulgur::server
