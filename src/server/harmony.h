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
// all), reasoning (analysis) and tool calls; a call whose arguments are not a JSON object is given
// back as content, word for word. Streaming: text that may be the start of a tag is held until
// it is known; the same text split anywhere gives the same result.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/tool_call_parser.h"

namespace fulgur::server {

// Whether a chat template writes harmony: it has both <|start|> and <|channel|> (llama.cpp's
// test for LLM_CHAT_TEMPLATE_OPENAI_MOE).
bool is_harmony_template(std::string_view template_source);

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
  // With `parallel` false only the first call is kept (OpenAI's parallel_tool_calls: false).
  explicit HarmonyParser(bool parallel);

  ParsedReply push(std::string_view text) override;
  ParsedReply finish() override;
  size_t n_calls() const override { return n_calls_; }

 private:
  enum class State { kStart, kHeader, kBody };
  void end_message(ParsedReply& out);
  void emit_body(std::string_view text, ParsedReply& out);

  bool parallel_;
  State state_ = State::kStart;
  std::string pending_;  // text not yet placed: a possible tag, or the header so far
  HarmonyHeader header_;
  std::string call_args_;  // the body of a message to a recipient
  size_t n_calls_ = 0;
};

}  // namespace fulgur::server
