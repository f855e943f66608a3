// SIGTERM drains `fulgur serve`: streams in flight when the signal comes are written to their
// end (each the text `fulgur run` gives alone), a new connection is refused as soon as the
// server says it is draining, a request on a connection kept open gets 503, and the process
// exits 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
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

// Polls the server's stderr for `needle` (the server writes it once); "" when it never came.
std::string wait_for_stderr(const ServeProcess& s, const std::string& needle) {
  for (int i = 0; i < 6000; ++i) {  // 60 s: a bound on a stuck server, not a timing assertion
    const std::string err = s.stderr_text();
    const size_t at = err.find(needle);
    if (at != std::string::npos) return err.substr(at, err.find('\n', at) - at);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

TEST(ServeDrain, SigtermFinishesFourStreamsRefusesNewConnectionsAndExitsZero) {
  // Long enough that the streams are still generating when the signal lands (the server's
  // message says how many were in flight, and the test requires all four).
  constexpr int kStreams = 4, kTokens = 1500;
  const std::string prompt = "def drain(requests):\n    for r in requests:\n";
  const std::string dir = test::make_cli_temp_dir();
  std::ofstream(dir + "/prompt.txt") << prompt;
  const test::RunResult run = test::run_fulgur("run -m '" + model() + "' -f '" + dir + "/prompt.txt' -n " +
                                                   std::to_string(kTokens) + " -c 2048 --temp 0 -t 1 --ignore-eos --json",
                                               dir);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string want = json::parse(run.out)["text"];

  ServeProcess s("-m " + model() + " -t 1 -c 8192 --parallel 4 --ignore-eos");
  ASSERT_TRUE(s.ok());
  std::atomic<int> started{0};
  std::vector<std::string> bodies(kStreams);
  std::vector<int> status(kStreams, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.emplace_back([&, i] {
      auto c = s.client();
      const json body = {{"prompt", prompt}, {"max_tokens", kTokens}, {"temperature", 0}, {"stream", true}};
      bool counted = false;
      int events = 0;
      auto res = test::post_streaming(c, "/v1/completions", body.dump(), [&](const char* d, size_t n) {
        bodies[i].append(d, n);
        // The first event is the empty opening chunk; a second means tokens are flowing.
        for (size_t at = 0; (at = std::string_view(d, n).find("data: ", at)) != std::string_view::npos; ++at) ++events;
        if (!counted && events >= 2) {
          counted = true;
          ++started;
        }
        return true;
      });
      status[i] = res ? res->status : -1;
    });
  }
  for (int i = 0; i < 6000 && started < kStreams; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(started.load(), kStreams) << s.stderr_text();

  // A client whose keep-alive connection was open before the signal (httplib keeps one for 5 s).
  httplib::Client kept("127.0.0.1", s.port());
  kept.set_keep_alive(true);
  auto before = kept.Get("/health");
  ASSERT_TRUE(before && before->status == 200);

  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  const std::string draining = wait_for_stderr(s, "draining ");
  EXPECT_EQ(draining, "draining 4 requests in flight (up to 30 s; signal again to stop now)") << s.stderr_text();
  // The listening socket is closed before that message: a new client is refused.
  httplib::Client late("127.0.0.1", s.port());
  late.set_connection_timeout(std::chrono::seconds(5));
  auto refused = late.Get("/health");
  EXPECT_FALSE(refused) << "a connection made after SIGTERM was answered: " << refused->status;
  if (!refused) {
    EXPECT_EQ(refused.error(), httplib::Error::Connection);
  }

  // The open connection gets a 503 that closes it (a load balancer retries elsewhere).
  auto after = kept.Get("/health");
  ASSERT_TRUE(after) << httplib::to_string(after.error());
  EXPECT_EQ(after->status, 503);
  EXPECT_EQ(after->get_header_value("Connection"), "close");
  EXPECT_NE(after->body.find("shutting down"), std::string::npos) << after->body;

  for (std::thread& t : clients) t.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    EXPECT_EQ(status[i], 200);
    const test::StreamedReply r = test::read_sse(bodies[i]);
    EXPECT_TRUE(r.done);
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_EQ(r.text, want);
  }
  EXPECT_EQ(s.wait_exit(), 0) << s.stderr_text();
  EXPECT_NE(s.stderr_text().find("fulgur serve: stopped"), std::string::npos) << s.stderr_text();
}

// --drain-timeout 0 keeps the old behaviour: stop at once, cutting what runs, still exit 0.
TEST(ServeDrain, DrainTimeoutZeroStopsAtOnce) {
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --parallel 1 --drain-timeout 0");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  EXPECT_EQ(s.wait_exit(), 0) << s.stderr_text();
  EXPECT_EQ(s.stderr_text().find("draining"), std::string::npos) << s.stderr_text();
}

}  // namespace
}  // namespace fulgur
