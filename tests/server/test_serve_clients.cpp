// Clients nobody here wrote against `fulgur serve`: the official `openai` npm package (chat,
// streaming chat, completions, models, an error, the API key) and the chat page in headless
// Chromium (load /?q=..., the reply streams into the DOM with its tokens/s and drafting line).
// Each skips, saying why, when its client is not installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "model/model_fixture.h"
#include "serve_process.h"

namespace fulgur {
namespace {

using test::ServeProcess;

std::string model() { return testing_support::tiny_model("qwen3", DType::kQ8_0, 1); }

// Runs a shell command; returns its exit status with stdout and stderr in files under dir.
test::RunResult shell(const std::string& cmd, const std::string& dir) {
  const int raw = std::system((cmd + " > '" + dir + "/out.txt' 2> '" + dir + "/err.txt'").c_str());
  test::RunResult r;
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  r.out = test::read_text(dir + "/out.txt");
  r.err = test::read_text(dir + "/err.txt");
  return r;
}

TEST(ServeClients, OfficialOpenAiNpmClient) {
  const std::string src = FULGUR_SOURCE_DIR;
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
  if (!std::filesystem::exists(src + "/node_modules/openai/package.json")) {
    GTEST_SKIP() << "the openai npm package is not installed (npm ci)";
  }
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --spec ngram --api-key test-key-123");
  ASSERT_TRUE(s.ok());
  const std::string dir = test::make_cli_temp_dir();
  const test::RunResult r =
      shell("node '" + src + "/tests/server/openai_client.mjs' " + std::to_string(s.port()) + " test-key-123", dir);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_FALSE(r.out.empty()) << r.err;
  const nlohmann::json seen = nlohmann::json::parse(r.out);
  EXPECT_EQ(seen["ok"], true);
  EXPECT_GE(seen["stream_chunks"].get<int>(), 3);
}

TEST(ServeClients, ChatPageStreamsAReplyInHeadlessChromium) {
  const char* chromium = "/usr/bin/chromium";
  if (!std::filesystem::exists(chromium)) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --spec ngram");
  ASSERT_TRUE(s.ok());
  const std::string dir = test::make_cli_temp_dir();
  // The flags that work on this machine with no network (machines/cpp.md); virtual time lets
  // the page run its fetch and render before the DOM is dumped.
  const std::string cmd = std::string("timeout 120 ") + chromium +
                          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                          " --disable-background-networking --disable-component-update --disable-sync"
                          " --user-data-dir='" + dir + "/profile' --virtual-time-budget=30000 --dump-dom"
                          " 'http://127.0.0.1:" + std::to_string(s.port()) + "/?q=def%20fibonacci(n):'";
  const test::RunResult r = shell(cmd, dir);
  ASSERT_EQ(r.status, 0) << r.err.substr(0, 2000);
  const std::string& dom = r.out;
  EXPECT_NE(dom.find("<div class=\"msg user\">def fibonacci(n):</div>"), std::string::npos) << dom;
  // The reply div is marked done once the stream ended with [DONE], and holds text.
  const size_t at = dom.find("<div class=\"msg assistant\" data-done=\"1\">");
  ASSERT_NE(at, std::string::npos) << dom;
  EXPECT_NE(dom.compare(at + 42, 6, "</div>"), 0) << "empty reply";
  EXPECT_NE(dom.find("tokens/s · drafted "), std::string::npos) << dom;
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"finished\"}"), 1);
}

}  // namespace
}  // namespace fulgur
