// Reads a reply as it streams into content and OpenAI tool calls, in one chat-template family's
// format (tool_call_formats.h). Content is passed on as it comes, except what might be the
// start of a call's opening tag (held, as stop strings hold a possible stop) and whitespace at
// its end (held until more content follows: the whitespace before a call, or after the last
// one, is dropped, so that a reply made only of calls has no content). A call is given once its
// block is closed and read; a block that does not read (bad JSON, a wrong shape) is given back
// as plain content, word for word. The same text split anywhere gives the same content and
// calls, so a non-streamed reply is this parser fed with the whole text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_call_formats.h"

namespace fulgur::server {

struct ParsedReply {
  std::string content;          // content that can be sent now
  std::string reasoning;        // reasoning_content that can be sent now (harmony's analysis)
  std::vector<ToolCall> calls;  // calls completed now, ids assigned
};

// What the server feeds a reply through: a chat-template family's tool-call format
// (ToolCallParser), or harmony's channels (server/harmony.h).
class ReplyParser {
 public:
  virtual ~ReplyParser() = default;
  virtual ParsedReply push(std::string_view text) = 0;
  virtual ParsedReply finish() = 0;
  virtual size_t n_calls() const = 0;
};

class ToolCallParser : public ReplyParser {
 public:
  // `format` must outlive the parser; `tools` is the request's tools array (copied). With
  // `parallel` false only the first call is kept (OpenAI's parallel_tool_calls: false); later
  // call blocks are dropped.
  ToolCallParser(const ToolCallFormat& format, nlohmann::ordered_json tools, bool parallel);

  ParsedReply push(std::string_view text) override;
  // The end of the reply: a tag prefix that was held is content; an unclosed block is read as
  // if closed (a model that ends right after its call), else given back as content.
  ParsedReply finish() override;

  size_t n_calls() const override { return n_calls_; }

 private:
  void add_content(std::string_view text, ParsedReply& out);
  void close_block(std::string_view block, bool closed, ParsedReply& out);

  const ToolCallFormat& format_;
  nlohmann::ordered_json tools_;
  bool parallel_;
  bool in_block_ = false;  // between an opening tag and its closing tag
  std::string pending_;    // in content: a possible start of the opening tag; in a block: the block so far
  std::string held_space_; // whitespace at the end of the content so far
  size_t n_calls_ = 0;
};

// A new call id: "call_" and 24 random letters and digits, as OpenAI's look.
std::string new_tool_call_id();

}  // namespace fulgur::server
