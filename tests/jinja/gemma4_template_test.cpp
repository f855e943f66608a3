// Gemma 4's published chat template (fixtures/gemma4_chat_template.jinja) rendered by fulgur's
// interpreter and by python3-jinja2 with HF's settings, byte for byte: a plain chat, a tool
// round trip in OpenAI's shape (declarations with nested parameter schemas, calls whose
// arguments are objects, role "tool" results matched to their calls by id, several calls in one
// turn), thinking stripped from earlier replies, and enable_thinking.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "jinja/chat_template.h"
#include "jinja/oracle.h"

namespace fulgur {
namespace {

using nlohmann::ordered_json;

std::string gemma4_template() {
  std::ifstream in(std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/gemma4_chat_template.jinja", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
   "parameters": {"type": "object", "required": ["city"], "properties": {
     "city": {"type": "string", "description": "City name"},
     "unit": {"type": "string", "enum": ["C", "F"]},
     "days": {"type": "integer", "nullable": true},
     "hours": {"type": "array", "items": {"type": "integer"}},
     "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
               "required": ["lat"]}}}}},
  {"type": "function", "function": {"name": "now", "description": "The time"}}])";

TEST(Gemma4Template, MatchesJinja2) {
  if (const std::string why = test::oracle_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto msgs = [](const char* j) { return ordered_json::parse(j); };
  const ordered_json chat = msgs(R"([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "<|channel>thought\nhm<channel|>Hello!"}, {"role": "user", "content": "Bye"}])");
  const ordered_json round_trip = msgs(R"([{"role": "user", "content": "Weather in Paris and the time?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather",
         "arguments": {"city": "Paris", "days": 2, "hours": [9, 12], "where": {"lat": 48.8, "lon": 2.3}, "metric": true}}},
        {"id": "c2", "type": "function", "function": {"name": "now", "arguments": {}}}]},
      {"role": "tool", "tool_call_id": "c2", "content": "12:00"},
      {"role": "tool", "tool_call_id": "c1", "content": "18 C"}])");
  ordered_json answered = round_trip;
  answered.push_back({{"role", "assistant"}, {"content", "18 C in Paris at noon."}});
  answered.push_back({{"role", "user"}, {"content", "Thanks"}});

  struct Case {
    ordered_json messages;
    bool tools;
    bool thinking;
  };
  const Case cases[] = {{chat, false, false}, {chat, true, true}, {round_trip, true, false}, {answered, true, false}};
  std::vector<test::OracleCase> oracle_cases;
  for (const Case& c : cases) {
    ordered_json ctx = {{"messages", c.messages}, {"add_generation_prompt", true}, {"bos_token", "<bos>"},
                        {"eos_token", "<eos>"}};
    if (c.tools) ctx["tools"] = ordered_json::parse(kTools);
    if (c.thinking) ctx["enable_thinking"] = true;
    oracle_cases.push_back({gemma4_template(), ctx});
  }
  const auto want = test::run_oracle(oracle_cases);
  for (size_t i = 0; i < oracle_cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    ASSERT_TRUE(want[i].ok) << want[i].output;
    std::string got;
    try {
      got = ChatTemplate(oracle_cases[i].template_source).render_ordered(oracle_cases[i].context);
    } catch (const Error& e) {
      FAIL() << e.what();
    }
    EXPECT_EQ(got, want[i].output);
  }
  // The tool round trip as Gemma 4 reads it: the calls in its own syntax, each result under its
  // call's name, and no new model turn after the results (the model goes on in the same turn).
  EXPECT_NE(want[2].output.find("<|tool_call>call:now{}<tool_call|>"), std::string::npos) << want[2].output;
  EXPECT_NE(want[2].output.find("<|tool_response>response:now{value:<|\"|>12:00<|\"|>}<tool_response|>"),
            std::string::npos) << want[2].output;
}

}  // namespace
}  // namespace fulgur
