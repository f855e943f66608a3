// Continuous batching changes nothing, and holds up under load: at temperature 0, 16
// concurrent requests each get exactly the text `fulgur run` gives for the same prompt alone,
// with no drafter, the n-gram drafter and a draft model (the target itself), and on recurrent
// targets (Gated DeltaNet hybrids) with their MTP block drafting, where a follow-up prompt
// reuses the checkpoint at the end of the first; 64 streaming
// clients x 10 requests on 127.0.0.1 all complete, streams abandoned mid-way free their
// slots, and the server's resident memory after the run stays within a bound of what it was
// after the first wave.
#include <gtest/gtest.h>

#include <barrier>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_test_util.h"
#include "model/model_fixture.h"
#include "serve_process.h"
#include "sse.h"

namespace fulgur {
namespace {

using nlohmann::json;
using test::ServeProcess;

std::string model() { return testing_support::tiny_model("qwen3", DType::kQ8_0, 1); }

std::vector<std::string> prompts16() {
  std::vector<std::string> p;
  for (int i = 0; i < 16; ++i) {
    std::string s = "def f" + std::to_string(i) + "(x):\n    return x + " + std::to_string(i * 7) + "\n";
    if (i % 2) s += s;  // repeated text: the n-gram drafter finds matches
    p.push_back(s);
  }
  return p;
}

// The n-gram drafter's matches on random-weight text are mostly rejected, and the default schedule
// may then judge it losing before it has drafted anything (its choice rests on measured times,
// which differ between machines); the fixed schedule drafts whenever a match is found, so the
// repeated prompts are drafted for on any machine.
const std::string kNgramFixed = "--spec ngram --spec-schedule fixed";

// Each prompt through `fulgur run` alone, then all at once through `fulgur serve` with each
// drafter setting: the same text for every request, and drafts were made.
void expect_concurrent_equal_run_alone(const std::string& model, const std::vector<std::string>& prompts,
                                       const std::vector<std::pair<std::string, std::string>>& specs) {
  constexpr int kTokens = 32;
  const std::string dir = test::make_cli_temp_dir();
  std::vector<std::string> want;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string file = dir + "/prompt" + std::to_string(i) + ".txt";
    std::ofstream(file) << prompts[i];
    const test::RunResult r =
        test::run_fulgur("run -m '" + model + "' -f '" + file + "' -n " + std::to_string(kTokens) + " --temp 0 -t 1 --json", dir);
    ASSERT_EQ(r.status, 0) << r.err;
    want.push_back(json::parse(r.out)["text"]);
  }
  for (const auto& [spec, drafter] : specs) {
    SCOPED_TRACE("drafter: " + (spec.empty() ? std::string("none") : spec));
    ServeProcess s("-m " + model + " -t 1 -c 4096 --parallel " + std::to_string(prompts.size()) +
                   " --prefill-budget 24 " + spec);
    ASSERT_TRUE(s.ok());
    std::vector<std::string> got(prompts.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < prompts.size(); ++i) {
      clients.emplace_back([&, i] {
        auto c = s.client();
        const bool stream = i % 2 == 0;
        const json body = {{"prompt", prompts[i]}, {"max_tokens", kTokens}, {"temperature", 0}, {"stream", stream}};
        auto res = c.Post("/v1/completions", body.dump(), "application/json");
        if (!res || res->status != 200) {
          got[i] = res ? "status " + std::to_string(res->status) + ": " + res->body : "error " + httplib::to_string(res.error());
          return;
        }
        got[i] = stream ? test::read_sse(res->body).text : json::parse(res->body)["choices"][0]["text"].get<std::string>();
      });
    }
    for (std::thread& t : clients) t.join();
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], want[i]) << "prompt " << i;
    if (!drafter.empty()) {
      EXPECT_GT(s.metric("fulgur_drafted_tokens_total{drafter=\"" + drafter + "\"}"), 0);
    }
  }
}

// ngram-mod's one pool serves all sixteen slots at once (as llama-server shares it).
const std::string kNgramModFixed =
    "--spec ngram-mod --spec-ngram-mod-n-match 4 --spec-ngram-mod-n-min 1 --spec-schedule fixed";

TEST(ServeBatching, SixteenConcurrentGreedyRequestsEqualFulgurRunAlone) {
  expect_concurrent_equal_run_alone(model(), prompts16(),
                                    {{"", ""}, {kNgramFixed, "ngram"}, {kNgramModFixed, "ngram-mod"},
                                     {"--spec draft-model -md " + model(), "draft-model"}});
}

// Recurrent targets (Gated DeltaNet and Mamba2 hybrids; the state of each slot rolls back
// through its snapshot planes): the same, with the target's own MTP block drafting too, or a
// recurrent draft model (which keeps its own states) for Nemotron-H.
TEST(ServeBatching, RecurrentTargetsGiveEachRequestItsRunAloneText) {
  std::vector<std::string> prompts = prompts16();
  prompts.resize(8);
  for (const char* arch : {"qwen35", "qwen3next"}) {
    SCOPED_TRACE(arch);
    const std::string m = testing_support::tiny_model(arch, DType::kQ8_0, 1, /*mtp=*/true);
    expect_concurrent_equal_run_alone(m, prompts, {{"", ""}, {kNgramFixed, "ngram"}, {"--spec draft-mtp", "draft-mtp"}});
  }
  SCOPED_TRACE("nemotron_h_moe");
  const std::string m = testing_support::tiny_model("nemotron_h_moe", DType::kQ8_0, 1);
  expect_concurrent_equal_run_alone(m, prompts, {{"", ""}, {kNgramFixed, "ngram"}, {"--spec draft-model -md " + m, "draft-model"}});
}

// A follow-up turn on a recurrent target reuses the slot's checkpoint at the end of the first
// prompt (the state after the reply is gone once a different continuation is asked for).
TEST(ServeBatching, ARecurrentTargetReusesThePromptCheckpoint) {
  const std::string m = testing_support::tiny_model("qwen35", DType::kQ8_0, 1);
  ServeProcess s("-m " + m + " -t 1 -c 1024 --parallel 1");
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  const std::vector<int32_t> first = {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10};
  auto complete = [&](const std::vector<int32_t>& prompt) {
    const json body = {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}};
    auto res = c.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
    return res ? json::parse(res->body) : json();
  };
  const json a = complete(first);
  std::vector<int32_t> next = first;
  next.insert(next.end(), {50, 51, 52});
  const json b = complete(next);
  const int64_t n_first = a["usage"]["prompt_tokens"];
  ASSERT_EQ(n_first, static_cast<int64_t>(first.size()));
  // All of the first prompt but its last token (the first anchor) was read into the state
  // that the checkpoint keeps; without it nothing would be reused.
  EXPECT_EQ(s.metric("fulgur_prompt_tokens_reused_total"), static_cast<double>(n_first - 1));
  EXPECT_EQ(b["usage"]["prompt_tokens"].get<int64_t>(), n_first + 3);
}

// Every client runs its requests one after another; a barrier after the first wave takes the
// memory baseline. Every 5th request of odd clients hangs up after its first chunk.
TEST(ServeLoad, SixtyFourStreamingClientsTimesTenRequests) {
  constexpr int kClients = 64, kRequests = 10, kTokens = 16;
  // No host-memory prompt cache: it grows by design (up to --cache-ram), and this measures leaks.
  ServeProcess s("-m " + model() + " -t 1 -c 4096 --parallel 64 --queue 64 --cache-ram 0");
  ASSERT_TRUE(s.ok());
  std::atomic<int> completed{0}, abandoned{0}, errors{0};
  std::atomic<long> rss_first_wave{0};
  std::barrier first_wave(kClients, [&]() noexcept { rss_first_wave = s.rss_kib(); });
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto cli = s.client();
      for (int r = 0; r < kRequests; ++r) {
        const bool hang_up = c % 2 == 1 && r % 5 == 4;
        const json body = {{"messages", {{{"role", "user"}, {"content", "client " + std::to_string(c) + " request " + std::to_string(r)}}}},
                           {"max_tokens", kTokens}, {"stream", true}, {"seed", c * 100 + r}};
        std::string received;
        int chunks = 0;
        auto res = test::post_streaming(cli, "/v1/chat/completions", body.dump(), [&](const char* d, size_t n) {
          received.append(d, n);
          return !(hang_up && ++chunks >= 2);
        });
        if (hang_up) {
          ++abandoned;
        } else if (res && res->status == 200 && test::read_sse(received).done &&
                   !test::read_sse(received).finish_reason.empty()) {
          ++completed;
        } else {
          ++errors;
        }
        if (r == 0) first_wave.arrive_and_wait();
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(completed.load() + abandoned.load(), kClients * kRequests);
  EXPECT_EQ(abandoned.load(), kClients / 2 * 2);
  // Abandoned streams are cancelled and their slots freed (at the engine's next step).
  for (int i = 0; i < 200 && s.metric("fulgur_slots_busy") != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(s.metric("fulgur_slots_busy"), 0);
  EXPECT_EQ(s.metric("fulgur_queue_length"), 0);
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"finished\"}") + s.metric("fulgur_requests_total{outcome=\"cancelled\"}"),
            kClients * kRequests);
  EXPECT_GE(s.metric("fulgur_requests_total{outcome=\"cancelled\"}"), 1);
  // Memory: the KV cache, slots and buffers are sized by the first wave; later waves may only
  // touch more of the handler pool (136 threads whose stacks and malloc arenas come into use as
  // the pool rotates; +2.7 MiB over 28.5 MiB measured), so the bound is 8 MiB: a leak of a
  // slot's or a request's buffers over 576 more requests would exceed it.
  const long rss_end = s.rss_kib();
  RecordProperty("rss_first_wave_kib", static_cast<int>(rss_first_wave.load()));
  RecordProperty("rss_end_kib", static_cast<int>(rss_end));
  EXPECT_LE(rss_end, rss_first_wave.load() + 8 * 1024) << "RSS after the first wave " << rss_first_wave.load()
                                                       << " KiB, after the run " << rss_end << " KiB";
  // The server still answers.
  auto res = s.client().Post("/v1/completions", R"({"prompt":"x","max_tokens":2})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

}  // namespace
}  // namespace fulgur
