// `fulgur serve` over HTTP on a tiny generated model: the endpoints' shapes, the malformed
// request corpus (each a 4xx JSON error naming the field, then a request that succeeds), the
// API key, body limits, stop strings, log-probabilities, the prompt cache, and a full queue (503).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "malformed_corpus.h"
#include "model/model_fixture.h"
#include "serve_process.h"
#include "sse.h"

namespace fulgur {
namespace {

using nlohmann::json;
using test::ServeProcess;

std::string model() { return testing_support::tiny_model("qwen3", DType::kQ8_0, 1); }

// -c 2048 over 4 slots: 512 tokens per request, as malformed_corpus.h expects.
const std::string kArgs = " -t 1 -c 2048 --parallel 4";

json post(const ServeProcess& s, const std::string& path, const json& body, int* status = nullptr) {
  auto res = s.client().Post(path, body.dump(), "application/json");
  if (!res) {
    ADD_FAILURE() << "no response from " << path;
    return {};
  }
  if (status) *status = res->status;
  return json::parse(res->body);
}

TEST(Serve, EndpointsAnswerInOpenAiShapes) {
  ServeProcess s("-m " + model() + kArgs);
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  const json models = json::parse(c.Get("/v1/models")->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "fulgur-synth-qwen3-tiny-seed1");
  EXPECT_EQ(models["data"][0]["meta"]["n_ctx_slot"], 512);

  int status = 0;
  const json chat = post(s, "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", 12}, {"temperature", 0}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(chat["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(chat["usage"]["completion_tokens"], 12);
  EXPECT_EQ(chat["usage"]["total_tokens"], chat["usage"]["prompt_tokens"].get<int>() + 12);

  const json cmpl = post(s, "/v1/completions", {{"prompt", "def f(x):"}, {"max_tokens", 5}, {"temperature", 0}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(cmpl["object"], "text_completion");
  EXPECT_TRUE(cmpl["choices"][0]["text"].is_string());
  EXPECT_EQ(cmpl["usage"]["completion_tokens"], 5);

  // Streaming: a role chunk, content chunks, a finish chunk, the usage chunk, [DONE].
  auto res = c.Post("/v1/chat/completions",
                    json({{"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", 12}, {"temperature", 0},
                          {"stream", true}, {"stream_options", {{"include_usage", true}}}}).dump(),
                    "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  const test::StreamedReply r = test::read_sse(res->body);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.text, chat["choices"][0]["message"]["content"]);  // same greedy reply
  EXPECT_EQ(r.finish_reason, "length");
  ASSERT_GE(r.events.size(), 3u);
  EXPECT_EQ(r.events.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(r.events.back()["usage"]["completion_tokens"], 12);
  EXPECT_TRUE(r.events.back()["choices"].empty());

  const json tok = post(s, "/tokenize", {{"content", "def f(x):"}}, &status);
  EXPECT_EQ(status, 200);
  const json detok = post(s, "/detokenize", {{"tokens", tok["tokens"]}}, &status);
  EXPECT_EQ(detok["content"], "def f(x):");
  // The chat page: one self-contained HTML file.
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("<title>fulgur</title>"), std::string::npos);
  EXPECT_EQ(page->body.find("http"), std::string::npos) << "the page must fetch nothing from the network";
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("fulgur_requests_total{outcome=\"finished\"} 3"), std::string::npos) << metrics->body;
}

TEST(Serve, MalformedCorpusGetsFieldNamingErrorsAndTheServerGoesOn) {
  ServeProcess s("-m " + model() + kArgs + " --max-body 65536");
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  const json good = {{"prompt", "x"}, {"max_tokens", 2}};
  const auto corpus = test::malformed_corpus();
  ASSERT_GE(corpus.size(), 30u);
  for (const test::MalformedCase& mc : corpus) {
    SCOPED_TRACE(std::string(mc.path) + " " + mc.body.substr(0, 100));
    auto res = c.Post(mc.path, mc.body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_GE(res->status, 400);
    EXPECT_LT(res->status, 500);
    const json e = json::parse(res->body);
    ASSERT_TRUE(e.contains("error")) << res->body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    if (*mc.param) {
      EXPECT_EQ(e["error"]["param"], mc.param) << res->body;
    } else {
      EXPECT_TRUE(e["error"]["param"].is_null()) << res->body;
    }
    auto ok = c.Post("/v1/completions", good.dump(), "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(json::parse(ok->body)["usage"]["completion_tokens"], 2);
  }
  // Transport-level refusals get JSON bodies too.
  auto big = c.Post("/v1/completions", std::string(70000, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_TRUE(json::parse(big->body).contains("error"));
  auto missing = c.Get("/v2/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(json::parse(missing->body).contains("error"));
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"bad\"}"), static_cast<double>(corpus.size()));
}

TEST(Serve, ApiKeyIsRequiredOnAllButHealthAndThePage) {
  ServeProcess s("-m " + model() + kArgs + " --api-key sesame");
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/")->status, 200);
  auto no_key = c.Get("/v1/models");
  EXPECT_EQ(no_key->status, 401);
  EXPECT_EQ(json::parse(no_key->body)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  EXPECT_EQ(c.Post("/v1/completions", R"({"prompt":"x","max_tokens":1})", "application/json")->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer sesam"}})->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "sesame"}})->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer sesame"}})->status, 200);
  EXPECT_EQ(c.Post("/v1/completions", {{"Authorization", "Bearer sesame"}}, R"({"prompt":"x","max_tokens":1})",
                   "application/json")->status,
            200);
}

TEST(Serve, StopStringsLogprobsAndThePromptCache) {
  ServeProcess s("-m " + model() + kArgs);
  ASSERT_TRUE(s.ok());
  const json base = {{"prompt", "def fibonacci(n):"}, {"max_tokens", 24}, {"temperature", 0}};
  const json full = post(s, "/v1/completions", base);
  const std::string text = full["choices"][0]["text"];
  ASSERT_GE(text.size(), 8u);
  // A stop string from the middle of the greedy reply: the reply ends just before it.
  json stopped = base;
  stopped["stop"] = json::array({text.substr(4, 3), "never appears"});
  const json st = post(s, "/v1/completions", stopped);
  const std::string cut = text.substr(0, text.find(text.substr(4, 3)));
  EXPECT_EQ(st["choices"][0]["text"], cut);
  EXPECT_EQ(st["choices"][0]["finish_reason"], "stop");
  stopped["stream"] = true;
  auto res = s.client().Post("/v1/completions", stopped.dump(), "application/json");
  EXPECT_EQ(test::read_sse(res->body).text, cut);

  // The repeated prompt came from a slot's cache (all but its last token).
  EXPECT_GT(st["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(st["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), st["usage"]["prompt_tokens"].get<int>() - 1);
  EXPECT_GT(s.metric("fulgur_prompt_tokens_reused_total"), 0);
  // The allocator's bytes in use (the soak's leak-or-fragmentation gauge): the slots' buffers and
  // the vocabulary live on the heap, far above a megabyte.
  EXPECT_GT(s.metric("fulgur_heap_in_use_bytes"), 1 << 20);

  json lp = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 6}, {"temperature", 0},
             {"logprobs", true}, {"top_logprobs", 2}};
  const json l = post(s, "/v1/chat/completions", lp);
  const json& content = l["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u);
  std::string joined;
  for (const json& e : content) {
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 2u);
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);  // greedy: the top token
    for (int b : e["bytes"]) joined += static_cast<char>(b);
  }
  // The random model's tokens need not end on character boundaries; where its reply is valid
  // UTF-8 the bytes spell it exactly.
  if (json(joined).dump(-1, ' ', false, json::error_handler_t::ignore) == json(joined).dump(-1, ' ', false, json::error_handler_t::replace)) {
    EXPECT_EQ(joined, l["choices"][0]["message"]["content"]);
  }
  EXPECT_GE(joined.size(), 6u);
  const json legacy = post(s, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}, {"logprobs", 1}});
  EXPECT_EQ(legacy["choices"][0]["logprobs"]["tokens"].size(), 3u);
  EXPECT_EQ(legacy["choices"][0]["logprobs"]["top_logprobs"][0].size(), 1u);
}

// llama-server's probes: /props, /slots (and --no-slots), echo and n_probs on completions.
TEST(Serve, PropsSlotsEchoAndNProbs) {
  ServeProcess s("-m " + model() + kArgs + " --temp 0.5");
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  const json props = json::parse(c.Get("/props")->body);
  EXPECT_EQ(props["total_slots"], 4);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 512);
  EXPECT_FLOAT_EQ(props["default_generation_settings"]["params"]["temperature"].get<float>(), 0.5f);
  EXPECT_EQ(props["model_path"], model());
  EXPECT_TRUE(props["chat_template"].is_string());
  EXPECT_EQ(props["endpoint_slots"], true);
  EXPECT_EQ(c.Post("/props", "{}", "application/json")->status, 501);

  json slots = json::parse(c.Get("/slots")->body);
  ASSERT_EQ(slots.size(), 4u);
  for (const json& sl : slots) {
    EXPECT_EQ(sl["is_processing"], false);
    EXPECT_FALSE(sl.contains("id_task"));  // nothing ran yet
  }
  const json base = {{"prompt", "def fibonacci(n):"}, {"max_tokens", 7}, {"temperature", 0}};
  const json plain = post(s, "/v1/completions", base);
  const std::string reply = plain["choices"][0]["text"];
  // The slot that ran it shows the request once it is done.
  slots = json::parse(c.Get("/slots")->body);
  int shown = 0;
  for (const json& sl : slots) {
    if (!sl.contains("id_task")) continue;
    ++shown;
    EXPECT_EQ(sl["is_processing"], false);
    EXPECT_EQ(sl["n_prompt_tokens"], plain["usage"]["prompt_tokens"]);
    EXPECT_EQ(sl["next_token"][0]["n_decoded"], 7);
  }
  EXPECT_EQ(shown, 1);

  // echo: the prompt's text, then the same greedy reply; streamed, the prompt comes first.
  json echo = base;
  echo["echo"] = true;
  EXPECT_EQ(post(s, "/v1/completions", echo)["choices"][0]["text"], "def fibonacci(n):" + reply);
  echo["stream"] = true;
  const test::StreamedReply streamed = test::read_sse(c.Post("/v1/completions", echo.dump(), "application/json")->body);
  EXPECT_EQ(streamed.text, "def fibonacci(n):" + reply);
  ASSERT_FALSE(streamed.events.empty());
  EXPECT_EQ(streamed.events.front()["choices"][0]["text"], "def fibonacci(n):");
  int status = 0;
  json echo_lp = base;
  echo_lp["echo"] = true;
  echo_lp["logprobs"] = 2;
  EXPECT_EQ(post(s, "/v1/completions", echo_lp, &status)["error"]["param"], "echo");
  EXPECT_EQ(status, 400);

  // n_probs: llama-server's name for the top alternatives, given back as OpenAI logprobs.
  json np = base;
  np["n_probs"] = 3;
  const json probs = post(s, "/v1/completions", np);
  EXPECT_EQ(probs["choices"][0]["text"], reply);
  ASSERT_EQ(probs["choices"][0]["logprobs"]["tokens"].size(), 7u);
  EXPECT_EQ(probs["choices"][0]["logprobs"]["top_logprobs"][0].size(), 3u);
  np["logprobs"] = 2;
  EXPECT_EQ(post(s, "/v1/completions", np, &status)["error"]["param"], "n_probs");

  ServeProcess off("-m " + model() + kArgs + " --no-slots");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off.client().Get("/slots")->status, 501);
  EXPECT_EQ(json::parse(off.client().Get("/props")->body)["endpoint_slots"], false);
}

// Slot choice for the prompt cache: a prompt that shares only a few tokens with a slot's history
// goes to the least recently used slot instead of evicting that cache (llama-server's
// --slot-prompt-similarity), so a later repeat of the cached prompt still finds it.
TEST(Serve, AFewCommonTokensDoNotEvictACachedPrompt) {
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --parallel 2");
  ASSERT_TRUE(s.ok());
  const std::string p1 = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat.";
  const std::string p2 = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.";
  const auto cached = [&](const std::string& prompt) {
    const json r = post(s, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 0}});
    return std::make_pair(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
                          r["usage"]["prompt_tokens"].get<int>());
  };
  cached(p1);
  cached(p2);
  EXPECT_EQ(cached(p1).first, cached(p1).second - 1);  // p1's slot is the most recent now
  // Shares "The quick" (a few tokens) with p1: below 10 % of it, so the LRU slot (p2's) takes it.
  const auto [c_small, n_small] = cached("The quick answer is that nobody really knows why the sky looks so very blue at noon.");
  EXPECT_LT(c_small, n_small / 10);
  const auto [c_again, n_again] = cached(p1);
  EXPECT_EQ(c_again, n_again - 1) << "p1's cache was evicted by a prompt sharing a few tokens";
}

// A long streamed request that holds a one-slot server's slot until release() (its client then
// goes away).
class SlotHolder {
 public:
  explicit SlotHolder(const ServeProcess& s)
      : thread_([this, &s] {
          auto c = s.client();
          test::post_streaming(c, "/v1/completions", R"({"prompt":"x","max_tokens":32000,"stream":true})",
                               [this](const char*, size_t) {
                                 started_ = true;
                                 return !stop_.load();
                               });
        }) {
    while (!started_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~SlotHolder() { release(); }
  void release() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> started_{false}, stop_{false};
  std::thread thread_;
};

// A non-streamed 2-token request sent from its own thread (it may wait in the queue); status
// and body once the thread is joined.
struct BackgroundPost {
  int status = 0;
  std::string body;
  std::thread thread;
  explicit BackgroundPost(const ServeProcess& s)
      : thread([this, &s] {
          if (auto res = s.client().Post("/v1/completions", R"({"prompt":"x","max_tokens":2})", "application/json")) {
            status = res->status;
            body = res->body;
          }
        }) {}
};

TEST(Serve, QueuedRequestsWaitAndAFullQueueIsRefusedWith503) {
  ServeProcess s("-m " + model() + " -t 1 -c 32768 --parallel 1 --queue 1 --ignore-eos");
  ASSERT_TRUE(s.ok());
  SlotHolder holder(s);  // one long streamed request holds the only slot
  // The next one waits in the queue (a non-streamed reply: spaces keep its connection checked).
  BackgroundPost waiting(s);
  for (int i = 0; i < 200 && s.metric("fulgur_queue_length") != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(s.metric("fulgur_queue_length"), 1);
  // The one after finds the queue full.
  int status = 0;
  const json e = post(s, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 503);
  EXPECT_EQ(e["error"]["type"], "server_error");
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"rejected\"}"), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // past one heartbeat
  holder.release();
  waiting.thread.join();
  // The abandoned stream freed the slot; the queued request was served after it.
  ASSERT_EQ(waiting.status, 200);
  EXPECT_EQ(waiting.body.front(), ' ') << "a heartbeat space before the JSON";
  EXPECT_EQ(json::parse(waiting.body)["usage"]["completion_tokens"], 2);
  for (int i = 0; i < 200 && s.metric("fulgur_slots_busy") != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(s.metric("fulgur_slots_busy"), 0);
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"cancelled\"}"), 1);
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"finished\"}"), 1);
}

// A queued request whose client left used to keep its place until a slot came free for it, so
// with a short queue a live client got 503 while only abandoned requests were waiting (found
// while reading the queue for bench/serve_soak.sh, whose queue holds every client). It now ends
// as cancelled as soon as the server sees the client gone, and frees its place.
TEST(Serve, AQueuedRequestWhoseClientLeftGivesUpItsPlace) {
  ServeProcess s("-m " + model() + " -t 1 -c 32768 --parallel 1 --queue 1 --ignore-eos");
  ASSERT_TRUE(s.ok());
  SlotHolder holder(s);
  // A streamed request queues, and its client leaves at the first bytes (the role chunk, sent
  // at once); the server notices at a heartbeat (1 s).
  {
    auto c = s.client();
    test::post_streaming(c, "/v1/completions", R"({"prompt":"y","max_tokens":2,"stream":true})",
                         [](const char*, size_t) { return false; });
  }
  for (int i = 0; i < 800 && s.metric("fulgur_queue_length") != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(s.metric("fulgur_queue_length"), 0) << "the abandoned request still holds its place in the queue";
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"cancelled\"}"), 1);
  // The queue's one place is free: the next request waits in it instead of a 503.
  BackgroundPost waiting(s);
  for (int i = 0; i < 200 && s.metric("fulgur_queue_length") != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(s.metric("fulgur_queue_length"), 1);
  holder.release();
  waiting.thread.join();
  ASSERT_EQ(waiting.status, 200) << waiting.body;
  EXPECT_EQ(json::parse(waiting.body)["usage"]["completion_tokens"], 2);
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"rejected\"}"), 0);
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"finished\"}"), 1);
}

}  // namespace
}  // namespace fulgur
