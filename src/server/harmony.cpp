#include "server/harmony.h"

#include <algorithm>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/stop_strings.h"
#include "server/tool_call_formats.h"

namespace fulgur::server {
namespace {

constexpr std::string_view kStart = "<|start|>", kChannel = "<|channel|>", kMessage = "<|message|>",
                           kConstrain = "<|constrain|>", kEnd = "<|end|>", kReturn = "<|return|>",
                           kCall = "<|call|>";
// How the reply's first header may begin, right after the prompt's "<|start|>assistant".
constexpr std::string_view kFirstHeader[] = {kChannel, " to=", kConstrain, kMessage};

struct Found {
  size_t at = std::string::npos;
  size_t size = 0;
};

// The earliest of `tags` in `text`.
Found find_first(std::string_view text, std::initializer_list<std::string_view> tags) {
  Found f;
  for (std::string_view t : tags) {
    const size_t at = text.find(t);
    if (at < f.at) f = {at, t.size()};
  }
  return f;
}

// How much of text's tail may still become one of `tags`.
size_t held_tail(std::string_view text, std::initializer_list<std::string_view> tags) {
  size_t keep = 0;
  for (std::string_view t : tags) keep = std::max(keep, partial_match_tail(text, t));
  return keep;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The words of a header part, with <|constrain|> read as a separator that marks the next word.
void read_words(std::string_view part, HarmonyHeader& h, bool channel_part) {
  bool first = true, constrained = false;
  size_t i = 0;
  while (i < part.size()) {
    if (part.substr(i).starts_with(kConstrain)) {
      constrained = true;
      i += kConstrain.size();
      continue;
    }
    if (is_space(part[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < part.size() && !is_space(part[j]) && !part.substr(j).starts_with(kConstrain)) ++j;
    const std::string_view word = part.substr(i, j - i);
    if (word.starts_with("to=")) {
      h.recipient = word.substr(3);
    } else if (constrained || (!first && word == "json")) {
      h.content_type = word;
    } else if (first) {
      (channel_part ? h.channel : h.role) = word;
    }
    first = false;
    constrained = false;
    i = j;
  }
}

}  // namespace

bool is_harmony_template(std::string_view source) {
  return source.find(kStart) != std::string_view::npos && source.find(kChannel) != std::string_view::npos;
}

HarmonyHeader parse_harmony_header(std::string_view header) {
  if (header.starts_with(kStart)) header.remove_prefix(kStart.size());
  HarmonyHeader h;
  const size_t ch = header.find(kChannel);
  read_words(header.substr(0, ch), h, false);
  if (ch != std::string_view::npos) read_words(header.substr(ch + kChannel.size()), h, true);
  return h;
}

std::span<const std::string_view> harmony_tags() {
  static constexpr std::string_view kTags[] = {kStart, kChannel, kMessage, kConstrain, kEnd, kReturn, kCall};
  return kTags;
}

std::string harmony_calls_gbnf(const std::vector<nlohmann::ordered_json>& functions, bool /*parallel*/) {
  std::vector<std::pair<std::string, nlohmann::ordered_json>> args;
  std::string calls;
  for (size_t f = 0; f < functions.size(); ++f) {
    const std::string name = functions[f].at("name").get<std::string>();
    args.emplace_back(cat("h-args-", f), arguments_schema(functions[f]));
    calls += cat(f ? " | " : "", gbnf_literal(name + " " + std::string(kConstrain) + "json" + std::string(kMessage)), " h-args-", f);
  }
  return cat("tool-calls ::= ", gbnf_literal(cat(kChannel, "commentary to=functions.")), " ( ", calls, " )\n") +
         json_schemas_to_gbnf(args);
}

HarmonyParser::HarmonyParser(bool parallel, bool read_calls) : parallel_(parallel), read_calls_(read_calls) {}

void HarmonyParser::emit_body(std::string_view text, ParsedReply& out) {
  if (!header_.recipient.empty() && read_calls_) {
    call_args_.append(text);
  } else if (header_.channel == "analysis") {
    out.reasoning.append(text);
  } else {
    out.content.append(text);
  }
}

void HarmonyParser::end_message(ParsedReply& out) {
  if (!header_.recipient.empty() && read_calls_) {
    const nlohmann::json args = nlohmann::json::parse(call_args_, nullptr, /*allow_exceptions=*/false);
    if (args.is_object()) {
      const std::string_view r = header_.recipient;
      if (parallel_ || n_calls_ == 0) {
        out.calls.push_back({new_tool_call_id(), std::string(r.starts_with("functions.") ? r.substr(10) : r),
                             args.dump()});
      }
      ++n_calls_;
    } else {
      out.content.append(call_args_);  // not a call after all: the client sees what was written
    }
  }
  call_args_.clear();
  header_ = {};
}

ParsedReply HarmonyParser::push(std::string_view text) {
  ParsedReply out;
  pending_.append(text);
  for (;;) {
    if (state_ == State::kStart) {
      // A reply that does not open with a header is plain content (a final answer).
      const bool header = std::any_of(std::begin(kFirstHeader), std::end(kFirstHeader), [&](std::string_view t) {
        return pending_.starts_with(t) || (pending_.size() < t.size() && t.starts_with(pending_));
      });
      if (header && std::none_of(std::begin(kFirstHeader), std::end(kFirstHeader),
                                 [&](std::string_view t) { return pending_.starts_with(t); })) {
        break;  // too short to tell yet
      }
      state_ = header ? State::kHeader : State::kBody;
      continue;
    }
    if (state_ == State::kHeader) {
      const size_t m = pending_.find(kMessage);
      if (m == std::string::npos) break;
      header_ = parse_harmony_header(std::string_view(pending_).substr(0, m));
      pending_.erase(0, m + kMessage.size());
      state_ = State::kBody;
      continue;
    }
    // A message's content ends at its own end tags, or (a model that forgot them) the next start.
    const Found end = find_first(pending_, {kEnd, kReturn, kCall, kStart});
    if (end.at == std::string::npos) {
      const size_t keep = held_tail(pending_, {kEnd, kReturn, kCall, kStart});
      emit_body(std::string_view(pending_).substr(0, pending_.size() - keep), out);
      pending_.erase(0, pending_.size() - keep);
      break;
    }
    emit_body(std::string_view(pending_).substr(0, end.at), out);
    end_message(out);
    // After an end tag the next message's header follows its <|start|>; a start tag itself
    // begins the header.
    const bool was_start = std::string_view(pending_).substr(end.at, end.size) == kStart;
    pending_.erase(0, end.at + (was_start ? 0 : end.size));
    state_ = State::kHeader;
  }
  return out;
}

ParsedReply HarmonyParser::finish() {
  ParsedReply out;
  if (state_ == State::kBody) {
    emit_body(pending_, out);
    end_message(out);  // a reply cut at its end tag (the tag ended generation)
  } else if (state_ == State::kStart) {
    out.content = pending_;
  } else if (!pending_.starts_with(kStart)) {
    // A header that never reached <|message|>: not harmony after all, shown as written. (One
    // after <|start|> is a message the reply began and never wrote: nothing to show.)
    out.content = pending_;
  }
  pending_.clear();
  state_ = State::kStart;
  return out;
}

}  // namespace fulgur::server
