// `fulgur serve`: the OpenAI-compatible HTTP server (src/server/) on one target model, with
// every speculative option of `run`; continuous batching over -np slots.
#include <pthread.h>
#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <thread>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/spec_options.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "jinja/chat_template.h"
#include "model/batch.h"
#include "server/engine.h"
#include "server/http_server.h"

namespace fulgur::cli {
namespace {

struct ServeOptions {
  std::string model, alias;
  int threads = 0;
  int64_t n_ctx = 0;
  int n_slots = 4;
  double slot_prompt_similarity = 0.1;
  int64_t cache_ram_mib = 8192;
  int max_queue = 64;
  int64_t prefill_budget = 256;
  size_t max_body = 1 << 20;
  int drain_timeout = 30;
  bool ignore_eos = false;
  std::string chat_template_file, scripted_reply_file;
  server::ServerOptions http;
  ModelOptions load;
  SamplerParams sampling;
  SpecCliOptions spec;
};

int serve(const ServeOptions& o) {
  check_spec_options(o.spec);
  LoadedModel lm = load_model(o.model, /*need_tokenizer=*/true, o.load);
  const Model& m = *lm.model;
  // A recurrent target holds one state per slot (plus the snapshots that roll back rejected
  // drafts and a prompt checkpoint: model/recurrent_state.h).
  Context ctx(m, {.n_ctx = o.n_ctx, .n_batch = 512, .n_threads = o.threads, .n_seq_max = std::clamp(o.n_slots, 1, kMaxSequences)});
  SpecSetup spec = make_spec_setup(o.spec, m, ctx, o.load);
  std::unique_ptr<ChatTemplate> tmpl;
  const std::string source = o.chat_template_file.empty() ? m.gguf().get_string("tokenizer.chat_template", "")
                                                          : read_text_file(o.chat_template_file);
  if (!source.empty()) tmpl = std::make_unique<ChatTemplate>(source);

  GeneratorParams gp;
  gp.sampling = o.sampling;
  gp.spec = spec_params(o.spec, o.model, ctx, spec);
  server::EngineParams ep{.n_slots = o.n_slots, .max_queue = o.max_queue, .prefill_budget = o.prefill_budget,
                          .slot_prompt_similarity = o.slot_prompt_similarity,
                          .cache_ram_bytes = o.cache_ram_mib << 20, .ignore_eos = o.ignore_eos,
                          .scripted_reply = {}};
  if (!o.scripted_reply_file.empty()) {
    ep.scripted_reply = lm.tokenizer->encode(read_text_file(o.scripted_reply_file), /*parse_special=*/true,
                                             /*add_special=*/false);
    FULGUR_CHECK(!ep.scripted_reply.empty(), "--scripted-reply '", o.scripted_reply_file, "' has no tokens");
    std::fprintf(stderr, "fulgur serve: --scripted-reply: every reply is the text of '%s', not the model's (testing)\n",
                 o.scripted_reply_file.c_str());
  }
  server::ServerOptions so = o.http;
  so.max_body_bytes = o.max_body;
  so.sampling = o.sampling;
  so.model_path = o.model;
  if (so.model_name.empty()) so.model_name = o.alias.empty() ? m.gguf().get_string("general.name", o.model) : o.alias;

  // Signals go to one thread that drains or stops the server; a client that hangs up mid-write
  // must not kill the process (SIGPIPE).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server::Engine engine(ctx, *lm.tokenizer, gp, spec.drafters, ep);
  // A handler thread per connection that may wait: every slot, the queue, and a few spare for
  // /health, /metrics and requests that are refused.
  const int n_http = o.n_slots + o.max_queue + 8;
  server::HttpServer http(engine, *lm.tokenizer, tmpl.get(), m.n_vocab(), so, n_http);
  const int port = http.bind();
  std::printf("fulgur serve: %s on http://%s:%d (%d slots of %lld tokens, %zu drafter%s)\n", so.model_name.c_str(),
              so.host.c_str(), port, o.n_slots, static_cast<long long>(engine.n_ctx_slot()), spec.drafters.size(),
              spec.drafters.size() == 1 ? "" : "s");
  std::fflush(stdout);
  std::atomic<bool> finished{false};  // run() returned: the signal thread has nothing left to do
  std::thread signals([&http, &finished, set, timeout = o.drain_timeout] {
    int sig = 0;
    sigwait(&set, &sig);
    if (finished) return;
    if (timeout <= 0) {
      http.stop();
      return;
    }
    // SIGTERM (or Ctrl-C): refuse new connections, finish what was asked. A second signal, or
    // the timeout, ends the process at once, cutting what is still running.
    const int n = http.in_flight();
    http.drain();  // before the message: whoever reads it may count on new connections being refused
    std::fprintf(stderr, "fulgur serve: %s: draining %d request%s in flight (up to %d s; signal again to stop now)\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", n, n == 1 ? "" : "s", timeout);
    const timespec limit{timeout, 0};
    const int again = sigtimedwait(&set, nullptr, &limit);
    if (finished) return;
    const int left = http.in_flight();
    std::fprintf(stderr, "fulgur serve: %s with %d request%s still in flight; exiting\n",
                 again < 0 && errno == EAGAIN ? "drain timed out" : "signalled again", left, left == 1 ? "" : "s");
    std::fflush(stderr);
    _exit(1);  // the engine and the handlers may be mid-request: no destructors
  });
  const bool ok = http.run();
  // run() also returns when the socket fails: wake the signal thread so it can be joined.
  finished = true;
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  std::fprintf(stderr, "fulgur serve: stopped\n");  // after a drain: every request was answered
  return ok ? 0 : 1;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", o->http.port, "port; 0 = any free port (printed)")->capture_default_str();
  cmd->add_option("--parallel", o->n_slots, "-np: slots (requests generated at once)")->capture_default_str();
  cmd->add_option("-c,--ctx-size", o->n_ctx, "context size in tokens, split evenly over the slots; 0 = min(training, 4096)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "threads; 0 = physical cores")->capture_default_str();
  cmd->add_option("--api-key", o->http.api_key, "require 'Authorization: Bearer KEY' on every endpoint but /health and /");
  cmd->add_option("--alias", o->alias, "model name in responses and /v1/models (default: general.name)");
  cmd->add_option("--queue", o->max_queue, "requests that may wait for a slot; more get 503")->capture_default_str();
  cmd->add_option("--prefill-budget", o->prefill_budget, "prompt tokens prefilled per step over all slots")
      ->capture_default_str();
  cmd->add_option("--slot-prompt-similarity", o->slot_prompt_similarity,
                  "a free slot is picked for its cached prompt when it covers more than this share of the "
                  "new prompt, else the least recently used slot (llama-server's; 0 = always the best cover)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--cache-ram", o->cache_ram_mib,
                  "MiB of host memory for prompts whose slot went to another prompt: a later request that "
                  "shares a longer prefix with one of them than with any slot gets its KV / recurrent state "
                  "copied back instead of prefilled; least recently used first out (llama-server's; 0 = "
                  "off; off with drafters that read the target's hidden states)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--max-body", o->max_body, "largest request body in bytes (413 beyond)")->capture_default_str();
  cmd->add_option("--drain-timeout", o->drain_timeout,
                  "on SIGTERM or Ctrl-C, refuse new connections and let requests in flight (streams "
                  "included) finish for up to this many seconds, then exit (0 when all finished, 1 if "
                  "cut short; a second signal cuts at once); 0 = stop at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--slots,!--no-slots", o->http.endpoint_slots,
                "GET /slots shows each slot's request and progress (on by default, as llama-server)");
  cmd->add_option("--chat-template-file", o->chat_template_file,
                  "a Jinja chat template to use instead of the GGUF's tokenizer.chat_template");
  cmd->add_option("--scripted-reply", o->scripted_reply_file,
                  "testing only: every reply is this file's text, token for token in place of the model's "
                  "choices (the model still runs), then ends; for client tests that need a given reply");
  add_model_options(cmd, o->load);
  add_sampling_options(cmd, o->sampling);
  add_spec_options(cmd, o->spec);
  cmd->callback([o, &exit_code] {
    validate(o->sampling);
    exit_code = serve(*o);
  });
}

}  // namespace fulgur::cli
