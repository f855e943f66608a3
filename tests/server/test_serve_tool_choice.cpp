// tool_choice "required" / a named function enforced for Gemma 4's and gpt-oss harmony's call
// formats, through `fulgur serve`, on random-weight synth gemma4 and gpt-oss models whose
// byte-level vocabularies hold the formats' tags as CONTROL tokens (as published GGUFs type
// them; fulgur's tokenizer makes harmony's header tags USER_DEFINED, as llama.cpp does, while
// Gemma 4's call tags stay CONTROL). A random model writes a call only because the grammar
// leaves it nothing else: every reply must be calls of the allowed tools with arguments their
// schemas allow, greedy and sampled, for several prompts and seeds, and the same greedy calls
// with an n-gram drafter. tool_choice none reads no calls (a scripted harmony call stays
// content), and a plain grammar (response_format) never writes a format's CONTROL tag.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "model/model_fixture.h"
#include "serve_process.h"
#include "synth/synth.h"
#include "tokenizer/builtin_vocab.h"

namespace fulgur {
namespace {

using nlohmann::json;
using test::ServeProcess;

// A tiny random `arch` model whose vocabulary is the builtin byte-level one with `tags` appended
// as CONTROL tokens; written once per process.
std::string model_with_tags(const std::string& arch, const std::vector<std::string>& tags) {
  const std::string dir = test::make_cli_temp_dir() + "/" + arch + "_tagged";
  const std::string path = dir + "/model.gguf";
  if (std::filesystem::exists(path)) return path;
  std::filesystem::create_directories(dir);
  Vocab v = builtin_byte_vocab();
  for (const std::string& t : tags) {
    v.tokens.push_back(t);
    v.token_types.push_back(TokenType::kControl);
    if (!v.scores.empty()) v.scores.push_back(0.0f);
  }
  std::ofstream(dir + "/tokenizer.json", std::ios::binary) << vocab_to_hf_json(v);
  std::ofstream(dir + "/tokenizer_config.json", std::ios::binary) << vocab_to_hf_tokenizer_config_json(v, "");
  SynthOptions o;
  o.arch = arch;
  o.shape = "tiny";
  o.seed = 1;
  o.type = DType::kF32;
  o.out = path;
  o.tokenizer_json = dir + "/tokenizer.json";
  synth_model(o);
  return path;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = test::make_cli_temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::vector<std::string> kGemma4Tags = {"<|tool_call>", "<tool_call|>", "<|\"|>"};
const std::vector<std::string> kHarmonyTags = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>",
                                               "<|return|>", "<|call|>", "<|constrain|>"};

// A harmony chat template (gpt-oss's message layout, reduced to what these tests need).
const std::string kHarmonyTemplate =
    "{%- if tools -%}<|start|>developer<|message|>Tools: {{ tools | tojson }}<|end|>{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' -%}<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>"
    "{%- else -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{%- endif -%}"
    "{%- endfor -%}{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}";

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"enum": ["Paris", "Oslo"]}, "metric": {"type": "boolean"}, "days": {"type": "integer"}},
    "required": ["city", "metric"]}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
    "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}}])");

json ask(ServeProcess& s, const std::string& prompt, json extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", prompt}}}}, {"tools", kTools}, {"max_tokens", 600}};
  body.update(extra);
  auto res = s.client().Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  return res ? json::parse(res->body) : json();
}

// The reply is calls only, each of an allowed tool (`only`, if set) with arguments its schema allows.
void expect_valid_calls(const json& reply, const std::string& only) {
  SCOPED_TRACE(reply.dump());
  const json& choice = reply["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  ASSERT_GE(choice["message"]["tool_calls"].size(), 1u);
  EXPECT_TRUE(choice["message"]["content"].is_null());
  for (const json& c : choice["message"]["tool_calls"]) {
    const std::string name = c["function"]["name"];
    if (!only.empty()) {
      EXPECT_EQ(name, only);
    }
    const json args = json::parse(c["function"]["arguments"].get<std::string>());
    if (name == "get_weather") {
      EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo");
      EXPECT_TRUE(args["metric"].is_boolean());
      if (args.contains("days")) {
        EXPECT_TRUE(args["days"].is_number_integer());
      }
      for (const auto& [k, v] : args.items()) EXPECT_TRUE(k == "city" || k == "metric" || k == "days") << k;
    } else {
      EXPECT_EQ(name, "get_time");
      EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET");
      EXPECT_EQ(args.size(), 1u);
    }
  }
}

json functions(const json& reply) {  // the calls without their random ids
  json out = json::array();
  for (const json& c : reply["choices"][0]["message"]["tool_calls"]) out.push_back(c["function"]);
  return out;
}

const json kNamed = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
const std::vector<std::string> kPrompts = {"Weather?", "What time is it in Oslo?", "Hi there", "Plan my trip to Paris."};

// Required and named choices on `base` (a server command line), greedy and sampled over the
// prompts; the greedy calls again with an n-gram drafter. Returns the drafts the drafter had
// accepted.
int64_t expect_enforced(const std::string& base) {
  std::vector<json> greedy;
  {
    ServeProcess plain(base);
    EXPECT_TRUE(plain.ok());
    if (!plain.ok()) return 0;
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      SCOPED_TRACE(kPrompts[i]);
      greedy.push_back(ask(plain, kPrompts[i], {{"tool_choice", "required"}, {"temperature", 0}}));
      expect_valid_calls(greedy.back(), "");
      expect_valid_calls(ask(plain, kPrompts[i], {{"tool_choice", "required"}, {"temperature", 1.0}, {"seed", 7 + i}}), "");
      const json named = ask(plain, kPrompts[i], {{"tool_choice", kNamed}, {"temperature", 1.0}, {"seed", 3 + i}});
      expect_valid_calls(named, "get_time");
      EXPECT_EQ(named["choices"][0]["message"]["tool_calls"].size(), 1u);
    }
  }
  ServeProcess drafted(base + " --spec ngram --spec-schedule fixed");
  EXPECT_TRUE(drafted.ok());
  if (!drafted.ok()) return 0;
  int64_t accepted = 0;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const json d = ask(drafted, kPrompts[i], {{"tool_choice", "required"}, {"temperature", 0}});
    EXPECT_EQ(functions(d), functions(greedy[i])) << d.dump();
    accepted += d["timings"].value("draft_n_accepted", 0);
  }
  std::printf("n-gram drafts accepted over the greedy calls: %lld\n", static_cast<long long>(accepted));
  std::fflush(stdout);  // before a later ServeProcess forks with the line still buffered
  return accepted;
}

std::string serve_args(const std::string& model, const std::string& tmpl) {
  return "-m " + model + " -t 1 -c 2048 --parallel 1 --chat-template-file " + tmpl;
}

// Qwen3's <tool_call> JSON: the drafter's drafts are accepted inside the calls, and a
// tool_choice beside a response_format is refused, naming tool_choice.
TEST(ServeToolChoice, Qwen3CallsAreEnforced) {
  const std::string base = serve_args(testing_support::tiny_model("qwen3", DType::kQ8_0, 1),
                                      std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/qwen3_chat_template.jinja");
  EXPECT_GT(expect_enforced(base), 0);
  ServeProcess s(base);
  ASSERT_TRUE(s.ok());
  const json both = ask(s, "Weather?", {{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}});
  EXPECT_EQ(both["error"]["param"], "tool_choice") << both.dump();
}

TEST(ServeToolChoice, Gemma4CallsAreEnforcedThoughItsTagsAreControlTokens) {
  const std::string model = model_with_tags("gemma4", kGemma4Tags);
  expect_enforced(serve_args(model, std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/gemma4_chat_template.jinja"));
}

TEST(ServeToolChoice, HarmonyCallsAreEnforced) {
  const std::string model = model_with_tags("gpt-oss", kHarmonyTags);
  expect_enforced(serve_args(model, write_file("harmony_template.jinja", kHarmonyTemplate)));
}

// A plain grammar (response_format) beside tools never writes a tool-call tag: only a
// tool_choice grammar's vocabulary gives the CONTROL tags their text, even on a server that
// built that vocabulary for an earlier request.
TEST(ServeToolChoice, APlainGrammarNeverWritesAControlTag) {
  const std::string model = model_with_tags("gemma4", kGemma4Tags);
  ServeProcess s(serve_args(model, std::string(FULGUR_SOURCE_DIR) + "/tests/jinja/fixtures/gemma4_chat_template.jinja"));
  ASSERT_TRUE(s.ok());
  expect_valid_calls(ask(s, "Weather?", {{"tool_choice", "required"}, {"temperature", 0}}), "");
  for (int seed = 1; seed <= 4; ++seed) {
    const json r = ask(s, "Weather?", {{"response_format", {{"type", "json_object"}}}, {"temperature", 1.0},
                                       {"seed", seed}, {"max_tokens", 200}});
    SCOPED_TRACE(r.dump());
    const json& m = r["choices"][0]["message"];
    EXPECT_FALSE(m.contains("tool_calls"));
    ASSERT_TRUE(m["content"].is_string());
    for (const std::string& tag : kGemma4Tags) EXPECT_EQ(m["content"].get<std::string>().find(tag), std::string::npos);
  }
}

// Harmony replies under tool_choice none: a call the model writes anyway is content, not a
// tool call (scripted, since a random model writes none); with auto it is a call.
TEST(ServeToolChoice, HarmonyToolChoiceNoneReturnsNoToolCalls) {
  const std::string model = model_with_tags("gpt-oss", kHarmonyTags);
  const std::string script = write_file("harmony_call_script.txt",
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>{\"city\":\"Paris\",\"metric\":true}<|call|>");
  ServeProcess s(serve_args(model, write_file("harmony_template.jinja", kHarmonyTemplate)) + " --scripted-reply " + script);
  ASSERT_TRUE(s.ok());
  const json none = ask(s, "Weather?", {{"tool_choice", "none"}});
  SCOPED_TRACE(none.dump());
  EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(none["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(none["choices"][0]["message"]["content"], "{\"city\":\"Paris\",\"metric\":true}");
  EXPECT_EQ(none["choices"][0]["message"]["reasoning_content"], "Need weather.");
  const json automatic = ask(s, "Weather?", json::object());
  ASSERT_EQ(automatic["choices"][0]["message"]["tool_calls"].size(), 1u) << automatic.dump();
  EXPECT_EQ(automatic["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris","metric":true})");
  // Without tools there is nothing to call either.
  json body = {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}}};
  auto res = s.client().Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_FALSE(json::parse(res->body)["choices"][0]["message"].contains("tool_calls")) << res->body;
}

}  // namespace
}  // namespace fulgur
