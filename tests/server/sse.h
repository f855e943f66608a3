// Reading a streamed reply: the `data:` events of a server-sent-event body.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fulgur::test {

struct StreamedReply {
  std::string text;           // the content deltas (chat) or texts (completions), joined
  std::string finish_reason;  // of the last choice that had one
  bool done = false;          // ended with data: [DONE]
  std::vector<nlohmann::json> events;
};

inline StreamedReply read_sse(const std::string& body) {
  StreamedReply r;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      r.done = true;
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(data);
    for (const auto& c : j.value("choices", nlohmann::json::array())) {
      if (c.contains("delta") && c["delta"].contains("content")) r.text += c["delta"]["content"].get<std::string>();
      if (c.contains("text")) r.text += c["text"].get<std::string>();
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) r.finish_reason = c["finish_reason"];
    }
    r.events.push_back(std::move(j));
  }
  return r;
}

}  // namespace fulgur::test
