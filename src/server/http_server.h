// The HTTP side of `fulgur serve` (cpp-httplib): OpenAI's /v1/chat/completions, /v1/completions
// and /v1/models, llama-server's /tokenize, /detokenize and /health, Prometheus' /metrics and
// the chat page at /. Handler threads parse and validate requests (server/request.h), hand them
// to the engine and stream its output back; a client whose connection fails is cancelled.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/engine.h"

namespace fulgur {
class ChatTemplate;
class Tokenizer;
}  // namespace fulgur

namespace fulgur::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port (bind() says which)
  std::string api_key;                  // non-empty: Authorization: Bearer KEY on all but /health and /
  std::string model_name;               // what /v1/models lists and responses carry
  size_t max_body_bytes = 1 << 20;      // larger bodies get 413
  SamplerParams sampling;               // a request's settings where it is silent
  std::string model_path;               // GET /props' model_path
  bool endpoint_slots = true;           // GET /slots answers (llama-server's --slots / --no-slots)
};

class HttpServer {
 public:
  // engine, tokenizer and chat_template (null: the model has none; chat requests get 400) must
  // outlive the server.
  HttpServer(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate* chat_template,
             int64_t n_vocab, ServerOptions options, int n_http_threads);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port (throws fulgur::Error when it cannot).
  int bind();
  // Serves until stop() or, once drain() was called, until every connection it had has ended;
  // returns false if the listening socket failed.
  bool run();
  // Ends run() at once: responses still being written are cut off.
  void stop();
  // Graceful shutdown (SIGTERM): closes the listening socket, so new connections are refused at
  // once, and lets every request already received finish, streams included; a request that
  // arrives later on an open keep-alive connection gets 503 and "Connection: close". run()
  // returns when the last connection ends. Safe to call from any thread, once.
  void drain();
  // Completion requests accepted and not yet fully answered (queued, generating or writing).
  int in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulgur::server
