#include "server/tool_call_parser.h"

#include <random>

#include "server/stop_strings.h"

namespace fulgur::server {

std::string new_tool_call_id() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(rng)];
  return id;
}

ToolCallParser::ToolCallParser(const ToolCallFormat& format, nlohmann::ordered_json tools, bool parallel)
    : format_(format), tools_(std::move(tools)), parallel_(parallel) {}

void ToolCallParser::add_content(std::string_view text, ParsedReply& out) {
  const size_t last = text.find_last_not_of(" \t\r\n");
  if (last == std::string_view::npos) {
    held_space_.append(text);
    return;
  }
  out.content += held_space_;
  out.content.append(text.substr(0, last + 1));
  held_space_.assign(text.substr(last + 1));
}

void ToolCallParser::close_block(std::string_view block, bool closed, ParsedReply& out) {
  std::optional<std::vector<ToolCall>> calls = format_.read_block(block, tools_);
  if (!calls) {
    // Not a call after all: the client sees exactly what the model wrote.
    std::string text(format_.open);
    text.append(block);
    if (closed) text.append(format_.close);
    add_content(text, out);
    return;
  }
  held_space_.clear();  // the whitespace between content and a call belongs to neither
  for (ToolCall& c : *calls) {
    if (!parallel_ && n_calls_ > 0) break;
    c.id = new_tool_call_id();
    out.calls.push_back(std::move(c));
    ++n_calls_;
  }
}

ParsedReply ToolCallParser::push(std::string_view text) {
  ParsedReply out;
  pending_.append(text);
  for (;;) {
    if (in_block_) {
      const size_t end = pending_.find(format_.close);
      if (end == std::string::npos) break;
      close_block(std::string_view(pending_).substr(0, end), /*closed=*/true, out);
      pending_.erase(0, end + format_.close.size());
      in_block_ = false;
      continue;
    }
    const size_t start = pending_.find(format_.open);
    if (start == std::string::npos) {
      const size_t keep = partial_match_tail(pending_, format_.open);
      add_content(std::string_view(pending_).substr(0, pending_.size() - keep), out);
      pending_.erase(0, pending_.size() - keep);
      break;
    }
    add_content(std::string_view(pending_).substr(0, start), out);
    pending_.erase(0, start + format_.open.size());
    in_block_ = true;
  }
  return out;
}

ParsedReply ToolCallParser::finish() {
  ParsedReply out;
  if (in_block_) {
    close_block(pending_, /*closed=*/false, out);
    in_block_ = false;
  } else {
    add_content(pending_, out);
  }
  pending_.clear();
  if (n_calls_ == 0) out.content += held_space_;
  held_space_.clear();
  return out;
}

}  // namespace fulgur::server
