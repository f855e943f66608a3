#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include "jinja/chat_template.h"
#include "server/chat_page.h"
#include "server/chat_prompt.h"
#include "server/harmony.h"
#include "server/metrics.h"
#include "server/openai_json.h"
#include "server/request.h"
#include "server/tool_call_parser.h"
#include "server/tool_choice_grammar.h"
#include "tokenizer/tokenizer.h"

namespace fulgur::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// How long a handler waits for new output before it checks on its client; a silent stream
// (queued, or prefilling a long prompt) sends an SSE comment, a non-streamed reply a space
// before its JSON, this often: a write is how a gone client is noticed.
constexpr auto kPoll = std::chrono::milliseconds(200);
constexpr auto kHeartbeat = std::chrono::milliseconds(1000);

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param, const std::string& code = "") {
  send_json(res, status, error_body(message, type, param, code));
}

const char* status_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 503: return "server_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

// Compares without an early exit, so the time taken does not tell how much of a key was right.
bool same_key(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0;
}

// One request's streaming state, shared by the content provider's calls.
struct ReplyState {
  ResponseHead head;
  bool stream = false, include_usage = false;
  bool first = true;
  std::string echo;                    // completions' echo: the prompt text, sent first
  std::string text;                    // non-streamed: the whole reply so far
  std::vector<LogprobEntry> logprobs;  // non-streamed: all of them
  std::string reasoning;               // non-streamed: the whole reasoning_content so far
  // Tool calls of the template's format, or harmony's channels; null: the reply is plain content.
  std::unique_ptr<ReplyParser> tool_parser;
  std::vector<ToolCall> calls;         // non-streamed: all of them
  size_t n_calls_sent = 0;             // streamed: the next call's index
  Clock::time_point last_write = Clock::now();

  // New text of the reply as content and completed tool calls; `done`: the reply ended.
  ParsedReply parse(const std::string& text, bool done) {
    if (!tool_parser) return {text, {}, {}};
    ParsedReply out = tool_parser->push(text);
    if (done) {
      ParsedReply tail = tool_parser->finish();
      out.content += tail.content;
      out.reasoning += tail.reasoning;
      for (ToolCall& c : tail.calls) out.calls.push_back(std::move(c));
    }
    return out;
  }
  bool made_tool_calls() const { return tool_parser && tool_parser->n_calls() > 0; }
};

}  // namespace

struct HttpServer::Impl {
  Engine& engine;
  const Tokenizer& tokenizer;
  const ChatTemplate* chat_template;
  RequestLimits limits;
  ServerOptions options;
  httplib::Server svr;
  std::atomic<int64_t> next_id{1};
  std::atomic<int64_t> bad_requests{0};
  std::atomic<int> in_flight{0};
  std::atomic<bool> draining{false};
  std::atomic<bool> stop_requested{false}, run_done{false};
  int64_t created = static_cast<int64_t>(std::time(nullptr));
  int listen_socket = -1;  // the last socket httplib set options on
  int bound_socket = -1;   // the listening socket, as bind() found it
  // The tags of the template's reply format (a tool-call format's, or harmony's) that are
  // CONTROL tokens: shown in a parsed reply's text so the parser can read them, and given their
  // text for a tool_choice grammar, which writes them. They depend only on (template,
  // tokenizer): found once here.
  std::vector<int32_t> reply_control_tags;

  Impl(Engine& e, const Tokenizer& t, const ChatTemplate* ct, int64_t n_vocab, ServerOptions o, int n_threads)
      : engine(e), tokenizer(t), chat_template(ct), options(std::move(o)) {
    limits.n_vocab = n_vocab;
    limits.n_ctx_slot = e.n_ctx_slot();
    limits.sampling = options.sampling;
    svr.new_task_queue = [n_threads] { return new httplib::ThreadPool(static_cast<size_t>(n_threads)); };
    svr.set_payload_max_length(options.max_body_bytes);
    svr.set_tcp_nodelay(true);  // each streamed chunk goes out at once
    svr.set_socket_options([this](int sock) {
      httplib::default_socket_options(sock);
      listen_socket = sock;
    });
    std::vector<std::string_view> tags;
    if (ct && is_harmony_template(ct->source())) {
      tags.assign(harmony_tags().begin(), harmony_tags().end());
    } else if (const ToolCallFormat* f = ct ? tool_call_format_for(ct->source()) : nullptr) {
      tags = {f->open, f->close, f->inner_tag};
    }
    for (const std::string_view tag : tags) {
      const int32_t id = tag.empty() ? -1 : t.token_to_id(tag);
      if (id >= 0 && t.token_type(id) == TokenType::kControl) reply_control_tags.push_back(id);
    }
    routes();
  }

  // Runs a handler; a BadRequest becomes its 4xx/503 JSON error, anything else a 500.
  template <class Fn>
  void guarded(httplib::Response& res, Fn&& fn) {
    try {
      fn();
    } catch (const BadRequest& e) {
      if (e.status() < 500) ++bad_requests;
      send_error(res, e.status(), e.what(), e.type(), e.param(),
                 e.status() == 503 ? "overloaded" : "");
    } catch (const std::exception& e) {
      send_error(res, 500, cat("internal error: ", e.what()), "server_error", "");
    }
  }

  // GET /props, llama-server's fields that describe this server (the ones about a web UI,
  // media and sleeping are left out or false).
  json props() const {
    const SamplerParams& sp = options.sampling;
    const json params = {{"temperature", sp.temperature}, {"top_k", sp.top_k}, {"top_p", sp.top_p},
                         {"min_p", sp.min_p}, {"repeat_penalty", sp.repeat_penalty},
                         {"repeat_last_n", sp.repeat_last_n}, {"presence_penalty", sp.presence_penalty},
                         {"frequency_penalty", sp.frequency_penalty}, {"n_predict", -1}};
    const Vocab& v = tokenizer.vocab();
    const auto token = [&](int32_t id) { return id >= 0 ? json(tokenizer.token_text(id)) : json(""); };
    return {{"default_generation_settings", {{"n_ctx", limits.n_ctx_slot}, {"params", params}}},
            {"total_slots", engine.n_slots()},
            {"model_alias", options.model_name},
            {"model_path", options.model_path},
            {"modalities", {{"vision", false}, {"audio", false}}},
            {"endpoint_slots", options.endpoint_slots},
            {"endpoint_props", false},
            {"endpoint_metrics", true},
            {"chat_template", chat_template ? chat_template->source() : ""},
            {"bos_token", token(v.bos_id)},
            {"eos_token", token(v.eos_id)},
            {"build_info", "fulgur"},
            {"is_sleeping", false}};
  }

  std::vector<int32_t> prompt_tokens(const CompletionRequest& r) {
    if (r.endpoint == Endpoint::kCompletion) {
      if (!r.prompt_ids.empty()) return r.prompt_ids;
      std::vector<int32_t> ids = tokenizer.encode(r.prompt, /*parse_special=*/true, /*add_special=*/true);
      if (ids.empty()) throw BadRequest(400, "prompt", "'prompt' has no tokens");
      return ids;
    }
    if (!chat_template) {
      throw BadRequest(400, "messages", "the model has no chat template (tokenizer.chat_template); use /v1/completions");
    }
    const std::string text = render_chat_prompt(*chat_template, r);
    std::vector<int32_t> ids = tokenizer.encode(text, /*parse_special=*/true, /*add_special=*/true);
    if (ids.empty()) throw BadRequest(400, "messages", "the messages render to no tokens");
    return ids;
  }

  void completion(const httplib::Request& req, httplib::Response& res, Endpoint ep) {
    CompletionRequest r = parse_completion_request(req.body, ep, limits);
    auto task = std::make_shared<Task>();
    task->prompt = prompt_tokens(r);
    const int64_t n_prompt = static_cast<int64_t>(task->prompt.size());
    const char* field = ep == Endpoint::kChat ? "messages" : "prompt";
    if (n_prompt >= limits.n_ctx_slot) {
      throw BadRequest(400, field, cat("'", field, "' is ", n_prompt, " tokens; a request's context is ",
                                       limits.n_ctx_slot, " tokens (-c / -np), and at least one must be left to generate"));
    }
    // Without max_tokens a reply may fill the request's context; with it, as much as fits.
    const int64_t room = limits.n_ctx_slot - n_prompt;
    task->n_predict = static_cast<int>(std::min(r.max_tokens.value_or(room), room));
    task->stop = r.stop;
    task->id = next_id++;
    auto state = std::make_shared<ReplyState>();
    state->head = {cat(ep == Endpoint::kChat ? "chatcmpl-" : "cmpl-", task->id), static_cast<int64_t>(std::time(nullptr)),
                   options.model_name, ep, r.n_logprobs};
    state->stream = r.stream;
    // echo: the prompt's text leads the reply (the first streamed chunk, or the whole text).
    if (r.echo) state->echo = r.prompt.empty() ? tokenizer.decode(r.prompt_ids, false) : r.prompt;
    state->include_usage = r.include_usage;
    if (!state->stream) state->text = state->echo;
    if (ep == Endpoint::kChat) {
      CallsGbnf calls_gbnf = nullptr;
      if (chat_template != nullptr && is_harmony_template(chat_template->source())) {
        // Harmony replies are always read: the analysis channel is reasoning, not content.
        state->tool_parser = std::make_unique<HarmonyParser>(r.tools.parallel, r.tools.parse_calls());
        task->shown_control_tokens = reply_control_tags;
        calls_gbnf = harmony_calls_gbnf;
      } else if (const ToolCallFormat* f = reply_tool_call_format(*chat_template, r)) {
        state->tool_parser = std::make_unique<ToolCallParser>(*f, r.tools.tools, r.tools.parallel);
        task->shown_control_tokens = reply_control_tags;
        calls_gbnf = f->calls_gbnf;
      }
      if (std::shared_ptr<const Grammar> g = tool_choice_grammar(calls_gbnf, r.tools)) {
        if (r.grammar) {
          throw BadRequest(400, "tool_choice", "'tool_choice' asks for a call, which cannot be combined with "
                                               "'response_format' / 'grammar' / 'json_schema'");
        }
        r.grammar = std::move(g);
        task->grammar_control_tokens = reply_control_tags;  // the grammar writes the format's tags
      }
    }
    task->request = std::move(r);
    engine.submit(task);  // 503 when the queue is full
    ++in_flight;  // until `release` below: a drain waits for it
    Engine* eng = &engine;
    std::atomic<int>* active = &in_flight;
    auto provider = [state, task, eng](size_t, httplib::DataSink& sink) {
      const auto write = [&](const std::string& s) {
        if (sink.write(s.data(), s.size())) {
          state->last_write = Clock::now();
          return true;
        }
        task->cancelled = true;  // the client is gone
        eng->notify();
        return false;
      };
      if (state->stream && state->first) {  // the role chunk at once: the client sees headers
        state->first = false;
        if (!write("data: " + dump(stream_chunk(state->head, state->echo, {}, true, nullptr)) + "\n\n")) return false;
      }
      std::string text;
      std::vector<LogprobEntry> lps;
      const bool done = task->wait_and_take(kPoll, text, lps);
      ParsedReply parsed = state->parse(text, done);
      if (state->stream) {
        if ((!parsed.content.empty() || !parsed.reasoning.empty() || !lps.empty()) &&
            !write("data: " + dump(stream_chunk(state->head, parsed.content, lps, false, nullptr, false, parsed.reasoning)) +
                   "\n\n")) {
          return false;
        }
        for (const ToolCall& c : parsed.calls) {
          for (const json& chunk : tool_call_chunks(state->head, c, state->n_calls_sent)) {
            if (!write("data: " + dump(chunk) + "\n\n")) return false;
          }
          ++state->n_calls_sent;
        }
      } else {
        state->text += parsed.content;
        state->reasoning += parsed.reasoning;
        for (LogprobEntry& e : lps) state->logprobs.push_back(std::move(e));
        for (ToolCall& c : parsed.calls) state->calls.push_back(std::move(c));
      }
      if (!done) {
        if (Clock::now() - state->last_write >= kHeartbeat && !write(state->stream ? ": ping\n\n" : " ")) return false;
        return true;
      }
      TaskResult result;
      {
        std::lock_guard<std::mutex> lk(task->mu);
        result = task->result;
      }
      std::string tail;
      if (result.finish_reason == "error") {
        const json err = error_body(cat("generation failed: ", result.error), "server_error", "");
        tail = state->stream ? "data: " + dump(err) + "\n\n" : dump(err);
      } else if (state->stream) {
        tail = "data: " + dump(stream_chunk(state->head, "", {}, false, &result, state->made_tool_calls())) + "\n\n";
        if (state->include_usage) tail += "data: " + dump(usage_chunk(state->head, result)) + "\n\n";
      } else {
        tail = dump(final_response(state->head, state->text, state->logprobs, result, state->calls, state->reasoning));
      }
      if (state->stream) tail += "data: [DONE]\n\n";
      if (!write(tail)) return false;
      sink.done();
      return true;
    };
    // Whatever ends the response (done, write failure, shutdown), the engine stops the task.
    auto release = [task, eng, active](bool) {
      task->cancelled = true;
      eng->notify();
      --*active;
    };
    res.status = 200;
    if (state->stream) {
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider("text/event-stream", provider, release);
    } else {
      res.set_chunked_content_provider("application/json", provider, release);
    }
  }

  void routes() {
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      // Draining: only a client that kept its connection open gets here; tell it to go
      // elsewhere (a load balancer retries a 503) and to close the connection.
      if (draining) {
        res.set_header("Connection", "close");
        send_error(res, 503, "the server is shutting down", "server_error", "", "shutting_down");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (options.api_key.empty() || req.path == "/health" || (req.method == "GET" && req.path == "/")) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      if (auth.compare(0, prefix.size(), prefix) != 0 || !same_key(auth.substr(prefix.size()), options.api_key)) {
        send_error(res, 401, "invalid or missing API key: send 'Authorization: Bearer KEY' (--api-key)",
                   "authentication_error", "", "invalid_api_key");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // Errors httplib answers itself (404, 413, 400 on a broken request line) get a JSON body.
    svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string msg = cat("HTTP ", res.status);
      if (res.status == 404) msg = cat("no endpoint ", req.method, " ", req.path);
      if (res.status == 413) msg = "the request body is too large (--max-body)";
      send_json(res, res.status, error_body(msg, status_type(res.status), ""));
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      send_error(res, 500, "internal error", "server_error", "");
    });
    svr.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(kChatPage, kChatPageSize), "text/html; charset=utf-8");
    });
    const auto models = [this](const httplib::Request&, httplib::Response& res) {
      json m = {{"id", options.model_name}, {"object", "model"}, {"created", created}, {"owned_by", "fulgur"},
                {"meta", {{"n_vocab", limits.n_vocab}, {"n_ctx_slot", limits.n_ctx_slot}}}};
      send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
    };
    svr.Get("/v1/models", models);
    svr.Get("/models", models);
    for (const char* path : {"/v1/chat/completions", "/chat/completions"}) {
      svr.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
        guarded(res, [&] { completion(req, res, Endpoint::kChat); });
      });
    }
    for (const char* path : {"/v1/completions", "/completions"}) {
      svr.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
        guarded(res, [&] { completion(req, res, Endpoint::kCompletion); });
      });
    }
    svr.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const TokenizeRequest r = parse_tokenize_request(req.body);
        const std::vector<int32_t> ids = tokenizer.encode(r.content, r.parse_special, r.add_special);
        json tokens = json::array();
        for (int32_t id : ids) {
          if (r.with_pieces) {
            tokens.push_back({{"id", id}, {"piece", tokenizer.token_piece(id, true)}});
          } else {
            tokens.push_back(id);
          }
        }
        send_json(res, 200, {{"tokens", tokens}});
      });
    });
    svr.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const std::vector<int32_t> ids = parse_detokenize_request(req.body, limits);
        send_json(res, 200, {{"content", tokenizer.decode(ids, false)}});
      });
    });
    svr.Get("/props", [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, props()); });
    svr.Post("/props", [](const httplib::Request&, httplib::Response& res) {
      send_error(res, 501, "this server does not change its properties at run time (POST /props)", "not_supported_error", "");
    });
    svr.Get("/slots", [this](const httplib::Request& req, httplib::Response& res) {
      if (!options.endpoint_slots) {
        send_error(res, 501, "the slots endpoint is off (serve --no-slots)", "not_supported_error", "");
        return;
      }
      const std::vector<SlotView> views = engine.slot_views();
      json out = json::array();
      int n_idle = 0;
      for (const SlotView& v : views) {
        n_idle += !v.is_processing;
        json j = {{"id", v.id}, {"n_ctx", limits.n_ctx_slot}, {"speculative", engine.drafting()},
                  {"is_processing", v.is_processing}};
        if (v.id_task >= 0) {
          j["id_task"] = v.id_task;
          j["n_prompt_tokens"] = v.n_prompt_tokens;
          j["n_prompt_tokens_processed"] = v.n_prompt_tokens - v.n_prompt_tokens_cache;
          j["n_prompt_tokens_cache"] = v.n_prompt_tokens_cache;
          j["next_token"] = json::array({{{"has_next_token", v.is_processing}, {"n_remain", v.n_remain},
                                          {"n_decoded", v.n_decoded}}});
        }
        out.push_back(std::move(j));
      }
      // llama-server's ?fail_on_no_slot: 503 when every slot is busy (a balancer's probe).
      if (req.has_param("fail_on_no_slot") && n_idle == 0) {
        send_error(res, 503, "no slot available", "server_error", "", "unavailable");
        return;
      }
      send_json(res, 200, out);
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(format_metrics(engine.metrics(), bad_requests.load()), "text/plain; version=0.0.4");
    });
  }
};

HttpServer::HttpServer(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
                       int64_t n_vocab, ServerOptions options, int n_http_threads)
    : impl_(std::make_unique<Impl>(engine, tokenizer, chat_template, n_vocab, std::move(options), n_http_threads)) {}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const ServerOptions& o = impl_->options;
  int port = o.port;
  if (port == 0) {
    port = impl_->svr.bind_to_any_port(o.host);
    FULGUR_CHECK(port > 0, "cannot listen on ", o.host, " (any port)");
  } else {
    FULGUR_CHECK(impl_->svr.bind_to_port(o.host, port), "cannot listen on ", o.host, ":", port,
                 " (in use, or not an address of this machine?)");
  }
  // cpp-httplib 0.11 listens with a backlog of 5: a burst of clients (64 connecting at once)
  // would overflow it and stall their handshakes. Listening again raises it.
  if (impl_->listen_socket >= 0) ::listen(impl_->listen_socket, SOMAXCONN);
  impl_->bound_socket = impl_->listen_socket;
  return port;
}

bool HttpServer::run() {
  if (impl_->stop_requested) {
    impl_->run_done = true;
    return true;
  }
  const bool ok = impl_->svr.listen_after_bind();
  impl_->run_done = true;
  // After drain() the accept loop ends on the socket's shutdown, which httplib reports as a
  // failure of the listening socket.
  return ok || impl_->draining;
}

// httplib's stop() does nothing until its accept loop runs: a signal right after bind() would
// be lost, so wait for the loop (or for run() to have given up) first.
void HttpServer::stop() {
  impl_->stop_requested = true;
  while (!impl_->svr.is_running() && !impl_->run_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->svr.stop();
}

// httplib's own stop() would cut every response short (its write loops end once the server
// socket is marked closed), so drain() shuts the listening socket down underneath it instead:
// the blocked accept() fails, httplib closes the socket and leaves its loop, then waits for its
// connection threads, and every response in progress is written to its end.
void HttpServer::drain() {
  if (impl_->draining.exchange(true)) return;
  if (impl_->bound_socket >= 0) ::shutdown(impl_->bound_socket, SHUT_RDWR);
}

int HttpServer::in_flight() const { return impl_->in_flight.load(); }

}  // namespace fulgur::server
