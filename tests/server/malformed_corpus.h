// Malformed requests the server must refuse with a 4xx JSON error naming the field at fault
// (`param`; "" = the body as a whole). Checked against the parser alone (test_request.cpp,
// RequestLimits n_vocab 489, n_ctx_slot 512) and over HTTP against a running `fulgur serve`
// with the same limits (test_serve.cpp), each followed there by a request that succeeds.
#pragma once

#include <string>
#include <vector>

namespace fulgur::test {

struct MalformedCase {
  const char* path;   // /v1/chat/completions, /v1/completions, /tokenize, /detokenize
  std::string body;
  const char* param;  // expected "param" of the error ("" = null)
  bool http_only = false;  // needs the model (tokenized prompt length)
};

inline std::vector<MalformedCase> malformed_corpus() {
  const char* chat = "/v1/chat/completions";
  const char* cmpl = "/v1/completions";
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  std::string long_prompt = R"({"prompt":[)";
  for (int i = 0; i < 600; ++i) long_prompt += i ? ",7" : "7";
  long_prompt += "]}";
  return {
      {chat, "", ""},
      {chat, "{", ""},
      {chat, R"({"messages": [}")", ""},
      {chat, "[1, 2, 3]", ""},
      {chat, "\"just a string\"", ""},
      {chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe bad utf-8\"}]}", ""},
      {chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}", ""},
      {chat, R"({})", "messages"},
      {chat, R"({"messages": "hello"})", "messages"},
      {chat, R"({"messages": []})", "messages"},
      {chat, R"({"messages": [42]})", "messages[0]"},
      {chat, R"({"messages": [{"content": "hi"}]})", "messages[0].role"},
      {chat, R"({"messages": [{"role": 7, "content": "hi"}]})", "messages[0].role"},
      {chat, R"({"messages": [{"role": "wizard", "content": "hi"}]})", "messages[0].role"},
      {chat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {chat, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})", "messages[0].content[0].type"},
      {chat, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content[0].text"},
      {chat, "{" + msgs + R"(, "max_tokens": -1})", "max_tokens"},
      {chat, "{" + msgs + R"(, "max_tokens": 0})", "max_tokens"},
      {chat, "{" + msgs + R"(, "max_tokens": 1e12})", "max_tokens"},
      {chat, "{" + msgs + R"(, "max_tokens": 99999999999999999999})", "max_tokens"},
      {chat, "{" + msgs + R"(, "max_tokens": 2.5})", "max_tokens"},
      {chat, "{" + msgs + R"(, "max_tokens": "ten"})", "max_tokens"},
      {chat, "{" + msgs + R"(, "max_completion_tokens": 100000})", "max_completion_tokens"},
      {chat, "{" + msgs + R"(, "temperature": "hot"})", "temperature"},
      {chat, "{" + msgs + R"(, "temperature": -0.5})", "temperature"},
      {chat, "{" + msgs + R"(, "top_p": 1.5})", "top_p"},
      {chat, "{" + msgs + R"(, "top_k": -3})", "top_k"},
      {chat, "{" + msgs + R"(, "min_p": 2})", "min_p"},
      {chat, "{" + msgs + R"(, "seed": "abc"})", "seed"},
      {chat, "{" + msgs + R"(, "seed": 1.5})", "seed"},
      {chat, "{" + msgs + R"(, "stop": 3})", "stop"},
      {chat, "{" + msgs + R"(, "stop": ["ok", 4]})", "stop[1]"},
      {chat, "{" + msgs + R"(, "stop": [""]})", "stop"},
      {chat, "{" + msgs + R"(, "presence_penalty": 3})", "presence_penalty"},
      {chat, "{" + msgs + R"(, "frequency_penalty": -2.5})", "frequency_penalty"},
      {chat, "{" + msgs + R"(, "logprobs": "yes"})", "logprobs"},
      {chat, "{" + msgs + R"(, "logprobs": true, "top_logprobs": 21})", "top_logprobs"},
      {chat, "{" + msgs + R"(, "top_logprobs": 2})", "top_logprobs"},
      {chat, "{" + msgs + R"(, "n": 2})", "n"},
      {chat, "{" + msgs + R"(, "stream": "true"})", "stream"},
      {chat, "{" + msgs + R"(, "stream_options": 1})", "stream_options"},
      {chat, "{" + msgs + R"(, "stream_options": {"include_usage": 1}})", "stream_options.include_usage"},
      {chat, "{" + msgs + R"(, "model": 12})", "model"},
      {chat, "{" + msgs + R"(, "speculative": "fast"})", "speculative"},
      {chat, "{" + msgs + R"(, "speculative": {"n_max": -1}})", "speculative.n_max"},
      {chat, "{" + msgs + R"(, "speculative": {"p_min": 1.5}})", "speculative.p_min"},
      {chat, "{" + msgs + R"(, "speculative.p_min": 1.5})", "speculative.p_min"},
      {chat, "{" + msgs + R"(, "speculative.n_maxx": 2})", "speculative.n_maxx"},
      {chat, "{" + msgs + R"(, "speculative": {"draft": 2}})", "speculative.draft"},
      {chat, "{" + msgs + R"(, "speculative": {"n_max": 2}, "speculative.n_max": 3})", "speculative.n_max"},
      {chat, "{" + msgs + R"(, "speculative": false, "speculative.n_max": 3})", "speculative"},
      {cmpl, R"({"max_tokens": 4})", "prompt"},
      {cmpl, R"({"prompt": {"text": "hi"}})", "prompt"},
      {cmpl, R"({"prompt": ""})", "prompt"},
      {cmpl, R"({"prompt": []})", "prompt"},
      {cmpl, R"({"prompt": [1, 2, 100000]})", "prompt[2]"},
      {cmpl, R"({"prompt": [1, -2]})", "prompt[1]"},
      {cmpl, R"({"prompt": ["one", "two"]})", "prompt[0]"},
      {cmpl, R"({"prompt": "hi", "logprobs": 6})", "logprobs"},
      {cmpl, long_prompt, "prompt", true},
      {"/tokenize", R"({"text": "hi"})", "content"},
      {"/tokenize", R"({"content": 5})", "content"},
      {"/detokenize", R"({"tokens": "1,2"})", "tokens"},
      {"/detokenize", R"({"tokens": [1, 9999]})", "tokens[1]"},
  };
}

}  // namespace fulgur::test
