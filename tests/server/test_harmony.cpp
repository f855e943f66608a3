// The harmony reply reader (server/harmony.h) on replies written as gpt-oss writes them: the
// format's facts (message = <|start|>ROLE<|channel|>CHANNEL<|message|>TEXT<|end|>, the reply's
// last message ending in <|return|> or <|call|>, channels analysis / commentary / final, tool
// calls to=functions.NAME <|constrain|>json), each as a transcript and its reading; the same
// reading for the text split at every point; bad calls given back as content; no calls read
// under tool_choice none; the tool_choice grammar's replies read as the calls it allows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/matcher.h"
#include "server/harmony.h"
#include "server/tool_choice_grammar.h"

namespace fulgur::server {
namespace {

struct Reading {
  std::string content, reasoning;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

void add(Reading& r, ParsedReply p) {
  r.content += p.content;
  r.reasoning += p.reasoning;
  for (const ToolCall& c : p.calls) {
    EXPECT_TRUE(c.id.starts_with("call_")) << c.id;
    r.calls.emplace_back(c.name, c.arguments);
  }
}

Reading read(std::string_view reply, bool parallel = true, bool read_calls = true) {
  HarmonyParser p(parallel, read_calls);
  Reading r;
  add(r, p.push(reply));
  add(r, p.finish());
  return r;
}

// The reading of `reply` in two pieces split at every byte, and one byte at a time, must be the
// reading of the whole.
void expect_split_invariant(std::string_view reply) {
  const Reading whole = read(reply);
  for (size_t cut = 0; cut <= reply.size(); ++cut) {
    HarmonyParser p(true, true);
    Reading r;
    add(r, p.push(reply.substr(0, cut)));
    add(r, p.push(reply.substr(cut)));
    add(r, p.finish());
    EXPECT_EQ(r.content, whole.content) << "cut at " << cut;
    EXPECT_EQ(r.reasoning, whole.reasoning) << "cut at " << cut;
    EXPECT_EQ(r.calls, whole.calls) << "cut at " << cut;
  }
  HarmonyParser p(true, true);
  Reading bytes;
  for (char c : reply) add(bytes, p.push(std::string_view(&c, 1)));
  add(bytes, p.finish());
  EXPECT_EQ(bytes.content, whole.content);
  EXPECT_EQ(bytes.reasoning, whole.reasoning);
  EXPECT_EQ(bytes.calls, whole.calls);
}

TEST(Harmony, RecognisesTheTemplate) {
  EXPECT_TRUE(is_harmony_template("{{- '<|start|>' + role }}{{ '<|channel|>final<|message|>' }}"));
  EXPECT_FALSE(is_harmony_template("<|im_start|>{{ role }}"));
  EXPECT_FALSE(is_harmony_template("<|start|>user<|message|>"));  // no channels: not harmony
}

TEST(Harmony, HeaderInEitherOrder) {
  HarmonyHeader h = parse_harmony_header("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json");
  EXPECT_EQ(h.role, "assistant");
  EXPECT_EQ(h.channel, "commentary");
  EXPECT_EQ(h.recipient, "functions.get_weather");
  EXPECT_EQ(h.content_type, "json");
  h = parse_harmony_header("assistant to=functions.lookup<|channel|>commentary json");
  EXPECT_EQ(h.role, "assistant");
  EXPECT_EQ(h.channel, "commentary");
  EXPECT_EQ(h.recipient, "functions.lookup");
  EXPECT_EQ(h.content_type, "json");
  h = parse_harmony_header("<|channel|>analysis");  // the reply's first header: no role
  EXPECT_EQ(h.role, "");
  EXPECT_EQ(h.channel, "analysis");
  EXPECT_EQ(h.recipient, "");
  h = parse_harmony_header("functions.get_weather to=assistant<|channel|>commentary");  // a tool's result
  EXPECT_EQ(h.role, "functions.get_weather");
  EXPECT_EQ(h.recipient, "assistant");
}

// The reply after the prompt's "<|start|>assistant": reasoning, then the answer, which ends the
// reply with <|return|> (generation stops there, so the tag itself may be missing).
TEST(Harmony, AnalysisIsReasoningAndFinalIsContent) {
  const std::string reply =
      "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>";
  const Reading r = read(reply);
  EXPECT_EQ(r.reasoning, "User asks 2+2. Answer 4.");
  EXPECT_EQ(r.content, "2 + 2 = 4.");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(read(reply.substr(0, reply.size() - 10)).content, "2 + 2 = 4.");  // stopped at <|return|>
  expect_split_invariant(reply);
}

TEST(Harmony, ToolCallsInBothHeaderOrders) {
  const std::string reply =
      "<|channel|>analysis<|message|>Need weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
      "{\"city\": \"Paris\", \"days\": 2}<|call|>";
  const Reading r = read(reply);
  EXPECT_EQ(r.reasoning, "Need weather.");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].first, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(r.calls[0].second), nlohmann::json::parse(R"({"city": "Paris", "days": 2})"));
  expect_split_invariant(reply);
  // The recipient in the role part, a bare content type, and the reply cut by <|call|> ending
  // generation.
  const Reading b = read(" to=functions.lookup<|channel|>commentary json<|message|>{\"q\":\"x\"}");
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(b.calls[0].first, "lookup");
  EXPECT_EQ(b.calls[0].second, R"({"q":"x"})");
}

TEST(Harmony, CommentaryPreambleIsContentAndSeveralCalls) {
  const std::string reply =
      "<|channel|>commentary<|message|>Checking two cities.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"A\"}<|call|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"B\"}<|call|>";
  const Reading r = read(reply);
  EXPECT_EQ(r.content, "Checking two cities.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].second, R"({"city":"B"})");
  EXPECT_EQ(read(reply, /*parallel=*/false).calls.size(), 1u);
  expect_split_invariant(reply);
}

TEST(Harmony, BadCallsAndHeaderlessRepliesAreContent) {
  // Arguments that are not a JSON object: the client sees what the model wrote.
  const Reading bad = read("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{not json<|call|>");
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "{not json");
  // No header at all (a model that skips the channel): plain content, tags and all.
  EXPECT_EQ(read("Hello there").content, "Hello there");
  EXPECT_EQ(read(" tomorrow").content, " tomorrow");  // starts like " to=" but is not
  expect_split_invariant(" tomorrow, then <|channel|>");
  // A header that never reaches <|message|> is shown as written.
  EXPECT_EQ(read("<|channel|>final").content, "<|channel|>final");
  // A message begun but not written shows nothing.
  EXPECT_EQ(read("<|channel|>final<|message|>Hi<|end|><|start|>assistant").content, "Hi");
}

TEST(Harmony, NoCallsAreReadUnderToolChoiceNone) {
  const std::string reply =
      "<|channel|>analysis<|message|>Need weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"A\"}<|call|>";
  const Reading r = read(reply, true, /*read_calls=*/false);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.reasoning, "Need weather.");
  EXPECT_EQ(r.content, "{\"city\":\"A\"}");  // what the model wrote, as content
}

const nlohmann::ordered_json kHarmonyTools = nlohmann::ordered_json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "noop"}}])");

ToolSettings harmony_settings(ToolChoice choice, std::string function = "") {
  ToolSettings s;
  s.tools = kHarmonyTools;
  s.choice = choice;
  s.function = std::move(function);
  return s;
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& reply) {
  GrammarMatcher m(g);
  return m.accept_bytes(reply) && m.complete();
}

TEST(Harmony, ToolChoiceGrammarIsOneCallAndNothingElse) {
  const auto g = tool_choice_grammar(harmony_calls_gbnf, harmony_settings(ToolChoice::kRequired));
  ASSERT_NE(g, nullptr);
  const std::string call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\", \"days\": 3}";
  const std::string analysis = "<|channel|>analysis<|message|>The user wants Oslo's weather; a | b < c.<|end|><|start|>assistant";
  EXPECT_TRUE(accepts(g, call));
  EXPECT_FALSE(accepts(g, analysis + call));  // no reasoning first
  EXPECT_TRUE(accepts(g, "<|channel|>commentary to=functions.noop <|constrain|>json<|message|>{\"x\": [1]}"));
  EXPECT_FALSE(accepts(g, "<|channel|>final<|message|>Sunny."));                 // no answer instead
  EXPECT_FALSE(accepts(g, call + "<|start|>assistant" + call));                    // one call
  EXPECT_FALSE(accepts(g, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}"));
  EXPECT_FALSE(accepts(g, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"days\": 3}"));
  // Whatever it allows reads as that call, its arguments the JSON written; the reasoning
  // gpt-oss might have written first would read as reasoning.
  const Reading r = read(analysis + call + "<|call|>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].first, "get_weather");
  EXPECT_EQ(r.calls[0].second, R"({"city":"Oslo","days":3})");
  EXPECT_EQ(r.content, "");
  // A named function: only it.
  const auto named = tool_choice_grammar(harmony_calls_gbnf, harmony_settings(ToolChoice::kFunction, "noop"));
  EXPECT_FALSE(accepts(named, call));
  EXPECT_TRUE(accepts(named, "<|channel|>commentary to=functions.noop <|constrain|>json<|message|>{}"));
  EXPECT_EQ(tool_choice_grammar(harmony_calls_gbnf, harmony_settings(ToolChoice::kAuto)), nullptr);
}

}  // namespace
}  // namespace fulgur::server
