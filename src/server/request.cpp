#include "server/request.h"

#include <cmath>
#include <limits>

#include "server/grammar_request.h"
#include "server/json_fields.h"
#include "server/tool_request.h"

namespace fulgur::server {
namespace {

using nlohmann::json;

// Most stop strings one request may give, and the longest one (bytes); OpenAI allows 4.
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxStopBytes = 256;
// Most top alternatives per token, as OpenAI (chat: 20; legacy completions: 5).
constexpr int kMaxTopLogprobsChat = 20;
constexpr int kMaxLogprobsCompletion = 5;

const char* type_name(const json& v) { return v.type_name(); }

std::optional<double> get_number(const json& o, const char* key, const std::string& param,
                                 double lo, double hi) {
  const json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(param, cat("'", param, "' must be a number, got ", type_name(*v)));
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi)) bad(param, cat("'", param, "' is ", v->dump(), ", expected a number in [", lo, ", ", hi, "]"));
  return d;
}

std::optional<int64_t> get_int(const json& o, const char* key, const std::string& param,
                               int64_t lo, int64_t hi) {
  const json* v = field(o, key);
  if (!v) return std::nullopt;
  int64_t i = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      bad(param, cat("'", param, "' is ", v->dump(), ", expected an integer in [", lo, ", ", hi, "]"));
    }
    i = v->get<int64_t>();
  } else if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9.0e15) {
    i = static_cast<int64_t>(v->get<double>());  // 16.0: an integer written as a float
  } else {
    bad(param, cat("'", param, "' must be an integer, got ", v->is_number() ? v->dump() : type_name(*v)));
  }
  if (i < lo || i > hi) bad(param, cat("'", param, "' is ", i, ", expected an integer in [", lo, ", ", hi, "]"));
  return i;
}

// Chat content: a string, or an array of {"type": "text", "text": "..."} parts.
std::string message_content(const json& m, const std::string& param) {
  const json* c = field(m, "content");
  if (!c) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) bad(param, cat("'", param, "' must be a string or an array of text parts, got ", type_name(*c)));
  std::string out;
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const std::string pp = cat(param, "[", i, "]");
    if (!part.is_object()) bad(pp, cat("'", pp, "' must be an object, got ", type_name(part)));
    const json* type = field(part, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "text") {
      bad(pp + ".type", cat("'", pp, ".type' must be \"text\" (the only content part this server reads)"));
    }
    const json* text = field(part, "text");
    if (!text) bad(pp + ".text", cat("'", pp, ".text' is missing"));
    out += get_string(*text, pp + ".text");
  }
  return out;
}

std::vector<ChatMessage> parse_messages(const json& body) {
  const json* ms = field(body, "messages");
  if (!ms) bad("messages", "'messages' is missing: a chat completion needs at least one message");
  if (!ms->is_array()) bad("messages", cat("'messages' must be an array, got ", type_name(*ms)));
  if (ms->empty()) bad("messages", "'messages' is empty: a chat completion needs at least one message");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string p = cat("messages[", i, "]");
    if (!m.is_object()) bad(p, cat("'", p, "' must be an object, got ", type_name(m)));
    const json* role = field(m, "role");
    if (!role) bad(p + ".role", cat("'", p, ".role' is missing"));
    ChatMessage msg;
    msg.role = get_string(*role, p + ".role");
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
      bad(p + ".role", cat("'", p, ".role' is '", msg.role,
                           "'; expected one of system, developer, user, assistant, tool"));
    }
    msg.content = message_content(m, p + ".content");
    if (const json* calls = field(m, "tool_calls")) {
      if (msg.role != "assistant") bad(p + ".tool_calls", cat("'", p, ".tool_calls': only an assistant message carries tool calls"));
      msg.tool_calls = parse_message_tool_calls(*calls, p + ".tool_calls");
    }
    if (msg.role == "tool") {
      // The id ties the result to its call; templates that number results rely on the order.
      const json* id = field(m, "tool_call_id");
      if (!id) bad(p + ".tool_call_id", cat("'", p, ".tool_call_id' is missing: a tool message answers one call"));
      msg.tool_call_id = get_string(*id, p + ".tool_call_id");
      if (const json* name = field(m, "name")) msg.name = get_string(*name, p + ".name");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

void check_token(int64_t id, const std::string& param, const RequestLimits& limits) {
  if (id < 0 || id >= limits.n_vocab) {
    bad(param, cat("'", param, "' is token id ", id, ", outside the vocabulary [0, ", limits.n_vocab, ")"));
  }
}

void parse_prompt(const json& body, CompletionRequest& r, const RequestLimits& limits) {
  const json* p = field(body, "prompt");
  if (!p) bad("prompt", "'prompt' is missing");
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
    if (r.prompt.empty()) bad("prompt", "'prompt' is empty");
    return;
  }
  // One prompt only (n = 1): a batch of prompts ["a", "b"] is refused, a one-element one read.
  const json* ids = p;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_array() || (*p)[0].is_string())) ids = &(*p)[0];
  if (ids->is_string()) {
    r.prompt = ids->get<std::string>();
    if (r.prompt.empty()) bad("prompt", "'prompt' is empty");
    return;
  }
  if (!ids->is_array()) bad("prompt", cat("'prompt' must be a string or an array of token ids, got ", type_name(*p)));
  if (ids->empty()) bad("prompt", "'prompt' is empty");
  for (size_t i = 0; i < ids->size(); ++i) {
    const json& t = (*ids)[i];
    const std::string pp = cat("prompt[", i, "]");
    if (!t.is_number_integer()) {
      bad(pp, cat("'", pp, "' must be a token id (integer), got ", t.is_number() ? t.dump() : type_name(t),
                  "; one prompt per request"));
    }
    if (t.is_number_unsigned() && t.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) check_token(-1, pp, limits);
    check_token(t.get<int64_t>(), pp, limits);
    r.prompt_ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
}

void parse_stop(const json& body, CompletionRequest& r) {
  const json* s = field(body, "stop");
  if (!s) return;
  if (s->is_string()) {
    r.stop.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    if (s->size() > kMaxStops) bad("stop", cat("'stop' has ", s->size(), " strings, at most ", kMaxStops));
    for (size_t i = 0; i < s->size(); ++i) r.stop.push_back(get_string((*s)[i], cat("stop[", i, "]")));
  } else {
    bad("stop", cat("'stop' must be a string or an array of strings, got ", type_name(*s)));
  }
  for (size_t i = 0; i < r.stop.size(); ++i) {
    if (r.stop[i].empty()) bad("stop", "'stop' holds an empty string");
    if (r.stop[i].size() > kMaxStopBytes) bad("stop", cat("'stop' holds a string of ", r.stop[i].size(), " bytes, at most ", kMaxStopBytes));
  }
}

void parse_logprobs(const json& body, CompletionRequest& r) {
  if (r.endpoint == Endpoint::kChat) {
    const bool on = get_bool(body, "logprobs", "logprobs").value_or(false);
    const std::optional<int64_t> top = get_int(body, "top_logprobs", "top_logprobs", 0, kMaxTopLogprobsChat);
    if (top && !on) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (on) r.n_logprobs = static_cast<int>(top.value_or(0));
  } else {
    // Legacy completions: "logprobs": N returns the N most likely tokens too.
    const std::optional<int64_t> n = get_int(body, "logprobs", "logprobs", 0, kMaxLogprobsCompletion);
    if (n) r.n_logprobs = static_cast<int>(*n);
  }
  // llama-server's n_probs: the top alternatives per token, given back as OpenAI's logprobs.
  if (const auto n = get_int(body, "n_probs", "n_probs", 0, kMaxTopLogprobsChat); n && *n > 0) {
    if (r.n_logprobs >= 0 && r.n_logprobs != *n) bad("n_probs", "'n_probs' disagrees with 'logprobs' / 'top_logprobs'");
    r.n_logprobs = static_cast<int>(*n);
  }
}

// Per-request drafting: llama-server's flat keys ("speculative.n_max": 4), fulgur's object
// ("speculative": {"n_max": 4}) or a boolean ("speculative": false). A key that is neither
// n_max, n_min nor p_min is refused, so a misspelt setting is never silently ignored.
void parse_speculative(const json& body, CompletionRequest& r) {
  constexpr std::string_view kPrefix = "speculative.";
  json spec = json::object();
  for (const auto& [key, value] : body.items()) {
    if (key.starts_with(kPrefix) && !value.is_null()) spec[key.substr(kPrefix.size())] = value;
  }
  const json* s = field(body, "speculative");
  if (s && s->is_boolean()) {
    if (!spec.empty()) bad("speculative", "'speculative': a boolean cannot stand beside 'speculative.*' keys");
    r.draft = s->get<bool>();
    return;
  }
  if (s) {
    if (!s->is_object()) bad("speculative", cat("'speculative' must be an object or false, got ", type_name(*s)));
    for (const auto& [key, value] : s->items()) {
      if (spec.contains(key)) bad(cat("speculative.", key), cat("'speculative.", key, "' is given twice"));
      if (!value.is_null()) spec[key] = value;
    }
  }
  for (const auto& [key, value] : spec.items()) {
    if (key != "n_max" && key != "n_min" && key != "p_min") {
      bad(cat("speculative.", key), cat("unknown key 'speculative.", key, "' (known: n_max, n_min, p_min)"));
    }
  }
  r.spec_n_max = static_cast<int>(get_int(spec, "n_max", "speculative.n_max", 0, 1024).value_or(0));
  if (const auto v = get_int(spec, "n_min", "speculative.n_min", 0, 1024)) r.spec_n_min = static_cast<int>(*v);
  if (const auto v = get_number(spec, "p_min", "speculative.p_min", 0.0, 1.0)) r.spec_p_min = static_cast<float>(*v);
  // n_max 0 alone would mean "the server's own"; an explicit 0 turns drafting off.
  if (spec.contains("n_max") && r.spec_n_max == 0) r.draft = false;
}

}  // namespace

nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param,
                          const std::string& code) {
  json e = {{"message", message}, {"type", type}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  e["code"] = code.empty() ? json(nullptr) : json(code);
  return {{"error", e}};
}

nlohmann::json parse_body(std::string_view body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    throw BadRequest(400, "", cat("the request body is not valid JSON (UTF-8): ", e.what()));
  }
  if (!j.is_object()) throw BadRequest(400, "", cat("the request body must be a JSON object, got ", j.type_name()));
  return j;
}

CompletionRequest parse_completion_request(std::string_view text, Endpoint endpoint,
                                           const RequestLimits& limits) {
  const json body = parse_body(text);
  CompletionRequest r;
  r.endpoint = endpoint;
  if (const json* m = field(body, "model")) r.model = get_string(*m, "model");
  if (endpoint == Endpoint::kChat) {
    r.messages = parse_messages(body);
    r.tools = parse_tool_settings(body, text);
  } else {
    parse_prompt(body, r, limits);
    r.echo = get_bool(body, "echo", "echo").value_or(false);
  }
  if (const auto n = get_int(body, "n", "n", 1, 1)) (void)n;  // one choice per request
  r.stream = get_bool(body, "stream", "stream").value_or(false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) bad("stream_options", cat("'stream_options' must be an object, got ", type_name(*so)));
    r.include_usage = get_bool(*so, "include_usage", "stream_options.include_usage").value_or(false);
  }
  // max_completion_tokens replaces max_tokens in OpenAI's chat API; either is read.
  const int64_t ctx = std::max<int64_t>(limits.n_ctx_slot, 1);
  r.max_tokens = get_int(body, "max_completion_tokens", "max_completion_tokens", 1, ctx);
  if (!r.max_tokens) r.max_tokens = get_int(body, "max_tokens", "max_tokens", 1, ctx);
  if (!r.max_tokens) {  // llama-server's name
    if (const auto n = get_int(body, "n_predict", "n_predict", -1, ctx); n && *n > 0) r.max_tokens = n;
  }
  r.sampling = limits.sampling;
  SamplerParams& sp = r.sampling;
  if (const auto v = get_number(body, "temperature", "temperature", 0.0, 2.0)) sp.temperature = static_cast<float>(*v);
  if (const auto v = get_number(body, "top_p", "top_p", 0.0, 1.0)) sp.top_p = static_cast<float>(*v);
  if (const auto v = get_int(body, "top_k", "top_k", 0, limits.n_vocab)) sp.top_k = static_cast<int>(*v);
  if (const auto v = get_number(body, "min_p", "min_p", 0.0, 1.0)) sp.min_p = static_cast<float>(*v);
  if (const auto v = get_number(body, "presence_penalty", "presence_penalty", -2.0, 2.0)) sp.presence_penalty = static_cast<float>(*v);
  if (const auto v = get_number(body, "frequency_penalty", "frequency_penalty", -2.0, 2.0)) sp.frequency_penalty = static_cast<float>(*v);
  if (const auto v = get_number(body, "repeat_penalty", "repeat_penalty", 0.01, 10.0)) sp.repeat_penalty = static_cast<float>(*v);
  if (const auto v = get_int(body, "repeat_last_n", "repeat_last_n", -1, ctx)) sp.repeat_last_n = static_cast<int>(*v);
  if (const auto v = get_int(body, "seed", "seed", INT64_MIN, INT64_MAX)) r.seed = static_cast<uint64_t>(*v);
  parse_stop(body, r);
  parse_logprobs(body, r);
  if (r.echo && r.n_logprobs >= 0) {
    bad("echo", "'echo' with 'logprobs' is not supported: the prompt tokens' log-probabilities are not computed");
  }
  parse_speculative(body, r);
  r.grammar = parse_grammar_fields(body, text);
  return r;
}

TokenizeRequest parse_tokenize_request(std::string_view text) {
  const json body = parse_body(text);
  TokenizeRequest r;
  const json* c = field(body, "content");
  if (!c) bad("content", "'content' is missing");
  r.content = get_string(*c, "content");
  r.add_special = get_bool(body, "add_special", "add_special").value_or(false);
  r.parse_special = get_bool(body, "parse_special", "parse_special").value_or(true);
  r.with_pieces = get_bool(body, "with_pieces", "with_pieces").value_or(false);
  return r;
}

std::vector<int32_t> parse_detokenize_request(std::string_view text, const RequestLimits& limits) {
  const json body = parse_body(text);
  const json* t = field(body, "tokens");
  if (!t) bad("tokens", "'tokens' is missing");
  if (!t->is_array()) bad("tokens", cat("'tokens' must be an array of token ids, got ", type_name(*t)));
  std::vector<int32_t> ids;
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string p = cat("tokens[", i, "]");
    const json& v = (*t)[i];
    if (!v.is_number_integer()) bad(p, cat("'", p, "' must be a token id (integer), got ", type_name(v)));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) check_token(-1, p, limits);
    check_token(v.get<int64_t>(), p, limits);
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

}  // namespace fulgur::server
