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
      // Tools (server/tool_request.h).
      {chat, "{" + msgs + R"(, "tools": {}})", "tools"},
      {chat, "{" + msgs + R"(, "tools": [1]})", "tools[0]"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "retrieval"}]})", "tools[0].type"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function"}]})", "tools[0].function"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"description": "d"}}]})", "tools[0].function.name"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "get weather"}}]})", "tools[0].function.name"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]})", "tools[1].function.name"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]})", "tools[0].function.parameters"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f", "description": 7}}]})", "tools[0].function.description"},
      {chat, "{" + msgs + R"(, "tool_choice": "maybe"})", "tool_choice"},
      {chat, "{" + msgs + R"(, "tool_choice": 3})", "tool_choice"},
      {chat, "{" + msgs + R"(, "tool_choice": "required"})", "tool_choice"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}})", "tool_choice.function.name"},
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function"}})", "tool_choice.function"},
      {chat, "{" + msgs + R"(, "parallel_tool_calls": "yes"})", "parallel_tool_calls"},
      {chat, "{" + msgs + R"(, "functions": [{"name": "f"}]})", "functions"},
      {chat, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "18 C"}]})", "messages[1].tool_call_id"},
      {chat, R"({"messages": [{"role": "user", "content": "hi", "tool_calls": []}]})", "messages[0].tool_calls"},
      {chat, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": "call f"}]})", "messages[1].tool_calls"},
      {chat, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}]})", "messages[1].tool_calls[0].function.name"},
      {chat, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": 5}}]}]})", "messages[1].tool_calls[0].function.arguments"},
      // The served model's template has no tool support.
      {chat, "{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f"}}]})", "tools", true},
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
