// Request parsing and stop strings, without a model: every malformed request of the corpus is a
// BadRequest (status 400) naming its field; well-formed ones carry every setting through.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "malformed_corpus.h"
#include "server/request.h"
#include "server/stop_strings.h"

namespace fulgur::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.n_vocab = 489;
  l.n_ctx_slot = 512;
  return l;
}

void parse(const std::string& path, const std::string& body) {
  if (path == "/v1/chat/completions") {
    parse_completion_request(body, Endpoint::kChat, limits());
  } else if (path == "/v1/completions") {
    parse_completion_request(body, Endpoint::kCompletion, limits());
  } else if (path == "/tokenize") {
    parse_tokenize_request(body);
  } else {
    parse_detokenize_request(body, limits());
  }
}

TEST(Request, MalformedCorpusIsRefusedNamingTheField) {
  const auto corpus = test::malformed_corpus();
  ASSERT_GE(corpus.size(), 30u);
  int checked = 0;
  for (const test::MalformedCase& c : corpus) {
    if (c.http_only) continue;
    SCOPED_TRACE(std::string(c.path) + " " + c.body.substr(0, 120));
    try {
      parse(c.path, c.body);
      ADD_FAILURE() << "accepted";
    } catch (const BadRequest& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), c.param) << e.what();
      if (*c.param) {
        EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << e.what();
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

TEST(Request, ChatSettingsAreRead) {
  const CompletionRequest r = parse_completion_request(
      R"({"model": "m", "messages": [{"role": "developer", "content": "be brief"},
          {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
          "max_completion_tokens": 7, "max_tokens": 9, "temperature": 0.5, "top_p": 0.9, "top_k": 5,
          "min_p": 0.1, "seed": -1, "stop": ["x", "yz"], "presence_penalty": 0.5, "frequency_penalty": -0.25,
          "logprobs": true, "top_logprobs": 3, "stream": true, "stream_options": {"include_usage": true},
          "speculative": {"n_max": 4, "n_min": 1, "p_min": 0.25}})",
      Endpoint::kChat, limits());
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_EQ(r.seed, UINT64_MAX);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.25f);
  EXPECT_EQ(r.n_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.draft);
  EXPECT_EQ(r.spec_n_max, 4);
  EXPECT_EQ(r.spec_n_min, 1);
  EXPECT_FLOAT_EQ(r.spec_p_min.value(), 0.25f);
}

TEST(Request, DefaultsComeFromTheServerAndNullMeansAbsent) {
  RequestLimits l = limits();
  l.sampling.temperature = 0.0f;
  const CompletionRequest r = parse_completion_request(
      R"({"prompt": [[1, 2, 3]], "temperature": null, "max_tokens": null, "speculative": false, "logprobs": 2})",
      Endpoint::kCompletion, l);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.draft);
  EXPECT_EQ(r.n_logprobs, 2);
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "x", "speculative": {"n_max": 0}})", Endpoint::kCompletion, l).draft);
}

// llama-server's flat per-request keys mean what fulgur's object does.
TEST(Request, LlamaServersFlatSpeculativeKeysAreRead) {
  const RequestLimits l = limits();
  const CompletionRequest r = parse_completion_request(
      R"({"prompt": "x", "speculative.n_max": 5, "speculative.n_min": 2, "speculative.p_min": 0.75})",
      Endpoint::kCompletion, l);
  EXPECT_TRUE(r.draft);
  EXPECT_EQ(r.spec_n_max, 5);
  EXPECT_EQ(r.spec_n_min, 2);
  EXPECT_FLOAT_EQ(r.spec_p_min.value(), 0.75f);
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "x", "speculative.n_max": 0})", Endpoint::kCompletion, l).draft);
  // Both forms at once, each naming its own settings.
  const CompletionRequest both = parse_completion_request(
      R"({"prompt": "x", "speculative": {"n_max": 3}, "speculative.p_min": 0.5})", Endpoint::kCompletion, l);
  EXPECT_EQ(both.spec_n_max, 3);
  EXPECT_FLOAT_EQ(both.spec_p_min.value(), 0.5f);
}

TEST(StopStrings, TextBeforeTheFirstStopIsSentAndPrefixesAreHeld) {
  StopMatcher m({"\n\n", "END"});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.push("de\n"), "de");  // "\n" may start "\n\n"
  EXPECT_EQ(m.push("x"), "\nx");
  EXPECT_EQ(m.push("E"), "");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("Dtail"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, EarliestMatchWinsAndFlushReleasesAHeldPrefix) {
  StopMatcher m({"bc", "abcd"});
  EXPECT_EQ(m.push("xxabcd"), "xx");
  EXPECT_TRUE(m.stopped());
  StopMatcher n({"stop"});
  EXPECT_EQ(n.push("ends in st"), "ends in ");
  EXPECT_EQ(n.flush(), "st");
  StopMatcher none;
  EXPECT_EQ(none.push("a\nb"), "a\nb");
}

}  // namespace
}  // namespace fulgur::server

namespace fulgur::server {
namespace {

// Seeds for fuzz/fuzz_request.cpp (README, Testing): the malformed corpus and well-formed
// requests of every endpoint, one file each.
//   FULGUR_WRITE_FUZZ_CORPUS=fuzz/corpus-request build/test_server --gtest_filter=RequestFuzzCorpus.*
TEST(RequestFuzzCorpus, Write) {
  const char* dir = std::getenv("FULGUR_WRITE_FUZZ_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "set FULGUR_WRITE_FUZZ_CORPUS=DIR to write the seed corpus";
  std::vector<std::string> bodies = {
      R"({"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":8,"temperature":0.7,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":3,"stop":["\n\n"],"presence_penalty":0.1,"frequency_penalty":0.2,"logprobs":true,"top_logprobs":2,"stream":true,"stream_options":{"include_usage":true},"speculative":{"n_max":4,"n_min":1,"p_min":0.5}})",
      R"({"prompt":"def f(x):","max_tokens":16,"logprobs":2,"stop":"\n"})",
      R"({"prompt":[1,2,3],"max_completion_tokens":4,"speculative":false})",
      R"({"content":"hello <|im_start|>","add_special":true,"with_pieces":true})",
      R"({"tokens":[1,2,3]})",
      R"({"messages":[{"role":"user","content":"w?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"18 C"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"auto","parallel_tool_calls":false})",
      // Replies in each tool-call format (the fuzzer also reads its input as a reply).
      "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
      "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
      "<TOOLCALL>[{\"name\": \"f\", \"arguments\": {}}]</TOOLCALL>",
  };
  for (const test::MalformedCase& c : test::malformed_corpus()) bodies.push_back(c.body);
  for (size_t i = 0; i < bodies.size(); ++i) {
    std::ofstream(std::string(dir) + "/seed" + std::to_string(i) + ".json", std::ios::binary) << bodies[i];
  }
}

}  // namespace
}  // namespace fulgur::server
