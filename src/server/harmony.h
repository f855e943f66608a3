// gpt-oss's "harmony" chat format: the reader of an assistant's reply. Facts (OpenAI's harmony
// response format, as gpt-oss writes it and llama.cpp's chat template detection recognises it):
//   a message is <|start|>ROLE[ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>TYPE]
//   <|message|>CONTENT and ends with <|end|> (one message), <|return|> (the reply's last) or
//   <|call|> (a tool call, which ends the reply too);
//   channels: analysis (chain of thought: OpenAI's reasoning_content), commentary (tool calls,
//   and preambles the user may see), final (the answer: content);
//   a tool call is a commentary message to=functions.NAME whose content is the JSON arguments,
//   usually constrained: <|channel|>commentary to=functions.get_weather <|constrain|>json
//   <|message|>{"city":"Paris"}<|call|>;
//   the prompt ends with <|start|>assistant, so the reply starts inside its first header.
// The reply goes to content (final, commentary without a recipient, or text with no header at
// all), reasoning (analysis) and tool calls; a call whose arguments are not a JSON object, or any
// call when calls are not read (tool_choice none, no tools), is given back as content, word for
// word. Streaming: text that may be the start of a tag is held until it is known; the same text
// split anywhere gives the same result.
//
// tool_choice required / a named function (harmony_calls_gbnf): the reply is one call,
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS
// then an end-of-generation token (gpt-oss's <|call|>), ARGS a JSON object its parameters'
// schema allows. No analysis message first: free reasoning has no bound a grammar could hold
// it to, so a model that does not end it would never call, and the other formats' grammars
// leave out reasoning too (Qwen3's <think>, Gemma 4's thought channel); the price is that
// gpt-oss acts without reasoning first (llama.cpp's grammar allows an analysis message and a
// commentary preamble, and the recipient in the role part). One call, whatever
// parallel_tool_calls says: <|call|> ends the reply.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"

namespace fulgur::server {

// Whether a chat template writes harmony: it has both <|start|> and <|channel|> (llama.cpp's
// test for LLM_CHAT_TEMPLATE_OPENAI_MOE).
bool is_harmony_template(std::string_view template_source);

// The tags of a reply's message structure: shown in its text (where a vocabulary has them as
// CONTROL tokens) so they can be read, and written by the tool_choice grammar.
std::span<const std::string_view> harmony_tags();

// tool_choice required / a named function: GBNF whose rule `tool-calls` is a reply that is one
// call of these functions (the request's `function` objects), as above (CallsGbnf).
std::string harmony_calls_gbnf(const std::vector<nlohmann::ordered_json>& functions, bool parallel);

// The parts of one message header (the text between <|start|> and <|message|>).
struct HarmonyHeader {
  std::string role;          // "" for the reply's first message (its role is in the prompt)
  std::string channel;       // analysis | commentary | final | ""
  std::string recipient;     // functions.NAME, or ""
  std::string content_type;  // "json" of <|constrain|>json (or a bare "json"), or ""
};
HarmonyHeader parse_harmony_header(std::string_view header);

class HarmonyParser : public ReplyParser {
 public:
  // With `parallel` false only the first call is kept (OpenAI's parallel_tool_calls: false);
  // with `read_calls` false no call is read (tool_choice none, or no tools).
  HarmonyParser(bool parallel, bool read_calls);

  ParsedReply push(std::string_view text) override;
  ParsedReply finish() override;
  size_t n_calls() const override { return n_calls_; }

 private:
  enum class State { kStart, kHeader, kBody };
  void end_message(ParsedReply& out);
  void emit_body(std::string_view text, ParsedReply& out);

  bool parallel_;
  bool read_calls_;
  State state_ = State::kStart;
  std::string pending_;  // text not yet placed: a possible tag, or the header so far
  HarmonyHeader header_;
  std::string call_args_;  // the body of a message to a recipient
  size_t n_calls_ = 0;
};

}  // namespace fulgur::server
