// Reading a request's JSON fields, shared by the request parsers (request.cpp, tool_request.cpp):
// each helper names the field (`param`, as OpenAI's error objects do) and what was expected
// when the value is wrong, by throwing BadRequest (400).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/request.h"

namespace fulgur::server {

[[noreturn]] inline void bad(const std::string& param, const std::string& message) {
  throw BadRequest(400, param, message);
}

// The value at key, or null when absent or JSON null (OpenAI treats null as "not given").
template <class Json>
const Json* field(const Json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  return &*it;
}

template <class Json>
std::optional<bool> get_bool(const Json& o, const char* key, const std::string& param) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(param, cat("'", param, "' must be a boolean, got ", v->type_name()));
  return v->template get<bool>();
}

template <class Json>
std::string get_string(const Json& v, const std::string& param) {
  if (!v.is_string()) bad(param, cat("'", param, "' must be a string, got ", v.type_name()));
  return v.template get<std::string>();
}

}  // namespace fulgur::server
