// Clients nobody here wrote against `fulgur serve`: the official `openai` npm package (chat,
// streaming chat, completions, models, an error, the API key) and the chat page in headless
// Chromium (load /?q=..., the reply streams into the DOM with its tokens/s and drafting line).
// Each skips, saying why, when its client is not installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --spec ngram --spec-schedule fixed --api-key test-key-123");
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

// A tool-call turn with the official client. The reply is scripted (`--scripted-reply`, see
// openai_tools_client.mjs): this checks the server's tool-call shapes as the client reads them
// and the turn the client sends back, not a model's ability to call tools.
TEST(ServeClients, OfficialOpenAiNpmClientMakesAToolCallTurn) {
  const std::string src = FULGUR_SOURCE_DIR;
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
  if (!std::filesystem::exists(src + "/node_modules/openai/package.json")) {
    GTEST_SKIP() << "the openai npm package is not installed (npm ci)";
  }
  const std::string dir = test::make_cli_temp_dir();
  const std::string script = dir + "/script.txt";
  std::ofstream(script, std::ios::binary)
      << "I will check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --parallel 2 --chat-template-file " + src +
                 "/tests/jinja/fixtures/qwen3_chat_template.jinja --scripted-reply " + script);
  ASSERT_TRUE(s.ok());
  const test::RunResult r = shell("node '" + src + "/tests/server/openai_tools_client.mjs' " + std::to_string(s.port()), dir);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_FALSE(r.out.empty()) << r.err;
  const nlohmann::json seen = nlohmann::json::parse(r.out);
  EXPECT_EQ(seen["ok"], true);
  EXPECT_EQ(seen["turns"], 2);
}

TEST(ServeClients, ChatPageStreamsAReplyInHeadlessChromium) {
  const std::string src = FULGUR_SOURCE_DIR;
  if (!std::filesystem::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  if (std::system("node -e 'process.exit(Number(process.versions.node.split(\".\")[0]) >= 20 ? 0 : 1)' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node >= 20 (its WebSocket drives Chromium) is not installed";
  }
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --spec ngram");
  ASSERT_TRUE(s.ok());
  const std::string dir = test::make_cli_temp_dir();
  const test::RunResult r =
      shell("node --experimental-websocket '" + src + "/tests/server/chat_page_check.mjs' 'http://127.0.0.1:" +
                std::to_string(s.port()) + "/?max_tokens=40&q=def%20fibonacci(n):' --screenshot '" + dir + "/page.png'",
            dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err.substr(0, 2000);
  const nlohmann::json page = nlohmann::json::parse(r.out);
  EXPECT_EQ(page["user"], "def fibonacci(n):");
  EXPECT_EQ(page["done"], "1") << page.dump();  // the stream ended with [DONE]
  EXPECT_FALSE(page["reply"].get<std::string>().empty());
  // The line under the reply: tokens, tokens/s, drafted and accepted tokens.
  EXPECT_NE(page["stats"].get<std::string>().find("tokens/s · drafted "), std::string::npos) << page.dump();
  EXPECT_GT(std::filesystem::file_size(dir + "/page.png"), 1000u);
  EXPECT_EQ(s.metric("fulgur_requests_total{outcome=\"finished\"}"), 1);
}

// The chat page offers tools (?tools=JSON) and shows a streamed tool call under the reply. The
// reply is scripted (a random-weight model does not call tools): what is checked is the page's
// reading of OpenAI's tool-call deltas.
TEST(ServeClients, ChatPageShowsAToolCallInHeadlessChromium) {
  const std::string src = FULGUR_SOURCE_DIR;
  if (!std::filesystem::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  if (std::system("node -e 'process.exit(Number(process.versions.node.split(\".\")[0]) >= 20 ? 0 : 1)' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node >= 20 (its WebSocket drives Chromium) is not installed";
  }
  const std::string dir = test::make_cli_temp_dir();
  const std::string script = dir + "/script.txt";
  std::ofstream(script, std::ios::binary)
      << "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  ServeProcess s("-m " + model() + " -t 1 -c 2048 --chat-template-file " + src +
                 "/tests/jinja/fixtures/qwen3_chat_template.jinja --scripted-reply " + script);
  ASSERT_TRUE(s.ok());
  // [{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}], URL-encoded.
  const std::string tools =
      "%5B%7B%22type%22%3A%22function%22%2C%22function%22%3A%7B%22name%22%3A%22get_weather%22%2C"
      "%22parameters%22%3A%7B%22type%22%3A%22object%22%7D%7D%7D%5D";
  const test::RunResult r =
      shell("node --experimental-websocket '" + src + "/tests/server/chat_page_check.mjs' 'http://127.0.0.1:" +
                std::to_string(s.port()) + "/?max_tokens=300&q=Weather%3F&tools=" + tools + "'",
            dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err.substr(0, 2000);
  const nlohmann::json page = nlohmann::json::parse(r.out);
  EXPECT_EQ(page["done"], "1") << page.dump();
  EXPECT_EQ(page["reply"], "Checking.") << page.dump();
  EXPECT_EQ(page["calls"], "\u2192 get_weather({\"city\":\"Paris\"})") << page.dump();
}

}  // namespace
}  // namespace fulgur
