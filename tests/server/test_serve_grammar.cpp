// Constrained output on the server: the request fields (response_format json_object /
// json_schema, llama-server's grammar and json_schema) parsed into a grammar, bad ones refused
// with 400 naming the field and the problem; and over HTTP on a tiny random model with a draft,
// streaming and not, the reply is JSON that fits the schema.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/matcher.h"
#include "model/model_fixture.h"
#include "serve_process.h"
#include "server/request.h"
#include "sse.h"

namespace fulgur {
namespace {

using nlohmann::json;
using server::BadRequest;
using server::Endpoint;
using test::ServeProcess;

const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 5}, "n": {"type": "integer"}, "ok": {"type": "boolean"}},
    "required": ["name", "n", "ok"]})";

server::RequestLimits limits() {
  server::RequestLimits l;
  l.n_vocab = 1000;
  l.n_ctx_slot = 512;
  return l;
}

server::CompletionRequest parse(const std::string& body) {
  return server::parse_completion_request(body, Endpoint::kCompletion, limits());
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.complete();
}

TEST(GrammarRequest, EveryFieldFormGivesAGrammar) {
  EXPECT_EQ(parse(R"({"prompt": "x"})").grammar, nullptr);
  EXPECT_EQ(parse(R"({"prompt": "x", "response_format": {"type": "text"}})").grammar, nullptr);
  const auto obj = parse(R"({"prompt": "x", "response_format": {"type": "json_object"}})").grammar;
  ASSERT_NE(obj, nullptr);
  EXPECT_TRUE(accepts(obj, R"({"a": [1]})"));
  EXPECT_FALSE(accepts(obj, "[1]"));
  // Key order is the schema's as written ("name" before "n"), not sorted.
  const std::string doc = R"({"name": "ab", "n": 3, "ok": true})";
  for (const std::string& body : {
           std::string(R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "t", "strict": true, "schema": )") + kSchema + "}}}",
           std::string(R"({"prompt": "x", "json_schema": )") + kSchema + "}",
           std::string(R"({"prompt": "x", "response_format": {"type": "json_object", "schema": )") + kSchema + "}}",
       }) {
    const auto g = parse(body).grammar;
    ASSERT_NE(g, nullptr) << body;
    EXPECT_TRUE(accepts(g, doc)) << body;
    EXPECT_FALSE(accepts(g, R"({"n": 3, "name": "ab", "ok": true})")) << body;
  }
  const auto gbnf = parse(R"({"prompt": "x", "grammar": "root ::= \"yes\" | \"no\""})").grammar;
  ASSERT_NE(gbnf, nullptr);
  EXPECT_TRUE(accepts(gbnf, "no"));
  EXPECT_FALSE(accepts(gbnf, "maybe"));
}

void expect_bad(const std::string& body, const std::string& param, const std::string& words) {
  try {
    parse(body);
    ADD_FAILURE() << "accepted: " << body;
  } catch (const BadRequest& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(GrammarRequest, BadConstraintsNameTheFieldAndTheProblem) {
  expect_bad(R"({"prompt": "x", "grammar": "root ::= \"a"})", "grammar", "line 1, column 12: unterminated string");
  expect_bad(R"({"prompt": "x", "grammar": "root ::= foo"})", "grammar", "rule 'foo' is used but never defined");
  expect_bad(R"({"prompt": "x", "grammar": 3})", "grammar", "must be a string");
  expect_bad(R"({"prompt": "x", "json_schema": {"type": "string", "pattern": "a+"}})", "json_schema",
             "keyword 'pattern' is not supported");
  expect_bad(R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}}}})",
             "response_format.json_schema.schema", "at /properties/d: keyword 'format' is not supported");
  expect_bad(R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "t"}}})",
             "response_format.json_schema.schema", "is missing");
  expect_bad(R"({"prompt": "x", "response_format": {"type": "yaml"}})", "response_format.type", "expected \"text\"");
  expect_bad(R"({"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {}})", "json_schema", "give one constraint");
}

std::string model() { return testing_support::tiny_model("qwen3", DType::kQ8_0, 1); }

void expect_fits(const std::string& text) {
  json doc;
  ASSERT_NO_THROW(doc = json::parse(text)) << text;
  ASSERT_TRUE(doc.is_object()) << text;
  EXPECT_TRUE(doc["name"].is_string()) << text;
  EXPECT_TRUE(doc["n"].is_number_integer()) << text;
  EXPECT_TRUE(doc["ok"].is_boolean()) << text;
  EXPECT_EQ(doc.size(), 3u) << text;
}

TEST(ServeGrammar, JsonSchemaRepliesFitTheSchemaAndBadSchemasAre400) {
  // The model drafts for itself: speculation runs under the grammar too.
  ServeProcess s("-m " + model() + " -md " + model() + " -t 1 -c 4096 --parallel 2");
  const json schema = json::parse(kSchema);
  json chat = {{"messages", {{{"role", "user"}, {"content", "a person"}}}},
               {"max_tokens", 1000}, {"temperature", 0},
               {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"strict", true}, {"schema", schema}}}}}};
  auto res = s.client().Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  expect_fits(reply["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");

  chat["stream"] = true;
  res = s.client().Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const test::StreamedReply streamed = test::read_sse(res->body);
  expect_fits(streamed.text);
  EXPECT_EQ(streamed.text, reply["choices"][0]["message"]["content"].get<std::string>());

  const json cmpl = {{"prompt", "{"}, {"max_tokens", 1000}, {"temperature", 0.8}, {"seed", 5}, {"json_schema", schema},
                     {"stream", true}};
  res = s.client().Post("/v1/completions", cmpl.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  expect_fits(test::read_sse(res->body).text);

  const json yes_no = {{"prompt", "?"}, {"max_tokens", 20}, {"grammar", "root ::= \"yes\" | \"no\""}};
  res = s.client().Post("/v1/completions", yes_no.dump(), "application/json");
  ASSERT_TRUE(res);
  const std::string answer = json::parse(res->body)["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(answer == "yes" || answer == "no") << answer;

  json bad = chat;
  bad["response_format"]["json_schema"]["schema"]["properties"]["name"]["pattern"] = "^[A-Z]";
  res = s.client().Post("/v1/chat/completions", bad.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  const json err = json::parse(res->body);
  EXPECT_EQ(err["error"]["param"], "response_format.json_schema.schema");
  EXPECT_NE(err["error"]["message"].get<std::string>().find("'pattern' is not supported"), std::string::npos) << res->body;
}

}  // namespace
}  // namespace fulgur
