// scripts/serve-cluster.sh: two `fulgur serve` replicas behind HAProxy. 200 requests (8 at a
// time) over prompts that share long per-document prefixes; half-way one replica is killed
// with SIGKILL. Every request ends with a 200 and the text `fulgur run` gives for its prompt
// alone; HAProxy's retries and health checks hide the dead replica from every request sent
// after it died (only replies it was already writing are lost, and those clients retry once);
// the requests of one document all reach the same replica (prefix affinity), and the share of
// prompt tokens served from the replicas' prompt caches is reported. SIGTERM to the script
// stops everything it started. Skips, saying so, without haproxy.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "cli/cli_test_util.h"
#include "model/model_fixture.h"
#include "serve_process.h"
#include "sse.h"

namespace fulgur {
namespace {

using nlohmann::json;
using test::slurp;

std::string model() { return testing_support::tiny_model("qwen3", DType::kQ8_0, 1); }

// A port free right now (the kernel's pick for a socket bound to port 0, then closed).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// Gone, or a zombie: either way its sockets are closed.
bool process_gone(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// The script as a child process; its stdout says the replicas' pids and URLs and HAProxy's pid.
class Cluster {
 public:
  Cluster(int n_replicas, const std::string& serve_args) {
    static const std::string dir = test::scratch_dir("fulgur_cluster");
    log_ = dir + "/cluster";
    port_ = free_port();
    std::vector<std::string> argv_s = {"/bin/bash", std::string(FULGUR_SOURCE_DIR) + "/scripts/serve-cluster.sh",
                                       "-m", model(), "-n", std::to_string(n_replicas), "--port", std::to_string(port_),
                                       "--fulgur", FULGUR_BINARY};
    std::istringstream in(serve_args);
    for (std::string a; in >> a;) argv_s.push_back(a);
    pid_ = test::spawn_logged(std::move(argv_s), log_);
    for (int i = 0; i < 12000 && !ready(); ++i) {  // 120 s: a bound on a stuck start, nothing timed
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string out = slurp(log_ + ".out");
    const std::regex replica("replica [0-9]+: pid ([0-9]+) http://127\\.0\\.0\\.1:([0-9]+)");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), replica); it != std::sregex_iterator(); ++it) {
      replicas_.push_back({std::stoi((*it)[1]), std::stoi((*it)[2])});
    }
    std::smatch m;
    if (std::regex_search(out, m, std::regex("haproxy: pid ([0-9]+)"))) haproxy_pid_ = std::stoi(m[1]);
    if (!ready()) ADD_FAILURE() << "serve-cluster.sh did not start:\n" << out << slurp(log_ + ".err");
  }
  ~Cluster() { stop(); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // SIGTERM, as Ctrl-C or a service manager would; waits for the script.
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  bool ready() const { return slurp(log_ + ".out").find("ready on http://127.0.0.1:") != std::string::npos; }
  int port() const { return port_; }
  struct Replica {
    pid_t pid;
    int port;
  };
  const std::vector<Replica>& replicas() const { return replicas_; }
  pid_t haproxy_pid() const { return haproxy_pid_; }
  std::string log() const { return slurp(log_ + ".out") + slurp(log_ + ".err"); }

 private:
  std::string log_;
  pid_t pid_ = -1, haproxy_pid_ = -1;
  int port_ = 0;
  std::vector<Replica> replicas_;
};

// A counter of a replica's /metrics; -1 when it does not answer.
double replica_metric(int port, const std::string& name) {
  httplib::Client c("127.0.0.1", port);
  auto res = c.Get("/metrics");
  if (!res) return -1;
  std::istringstream s(res->body);
  for (std::string line; std::getline(s, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// 8 documents of ~280 bytes (distinct from their first line, so the first 256 bytes of a
// request's body differ between documents and agree within one) x 2 questions.
constexpr int kDocs = 8, kQuestions = 2;
std::string prompt_of(int doc, int question) {
  std::string p = "# Notes " + std::to_string(doc) + ": the ";
  const char* topics[] = {"river", "engine", "garden", "ledger", "harbor", "signal", "orchard", "lantern"};
  for (int i = 0; i < 24; ++i) p += std::string(topics[doc]) + " " + std::to_string(i * (doc + 3)) + ", ";
  return p + "\nQ" + std::to_string(question) + ": what follows " + std::to_string(question * 11) + "?\nA:";
}

TEST(ServeCluster, TwoReplicasBehindHaproxyAnswerEveryRequestWhenOneIsKilled) {
  if (std::system("haproxy -v > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "haproxy is not installed (scripts/install-deps.sh installs it)";
  }
  constexpr int kRequests = 200, kClients = 8, kTokens = 16, kKillAt = kRequests / 2;
  // Each prompt through `fulgur run` alone, several at once (each run its own folder).
  std::vector<std::string> prompts, want(kDocs * kQuestions);
  for (int d = 0; d < kDocs; ++d) {
    for (int q = 0; q < kQuestions; ++q) prompts.push_back(prompt_of(d, q));
  }
  const std::string model_file = model();  // written once, before the threads read it
  std::vector<std::string> run_errors(prompts.size());
  std::vector<std::thread> runs;
  for (size_t w = 0; w < 4; ++w) {
    runs.emplace_back([&, w] {
      const std::string dir = test::make_cli_temp_dir();
      for (size_t p = w; p < prompts.size(); p += 4) {
        std::ofstream(dir + "/prompt.txt") << prompts[p];
        const test::RunResult r = test::run_fulgur(
            "run -m '" + model_file + "' -f '" + dir + "/prompt.txt' -n " + std::to_string(kTokens) + " --temp 0 -t 1 --json", dir);
        if (r.status != 0) {
          run_errors[p] = r.err;
          continue;
        }
        want[p] = json::parse(r.out)["text"];
      }
    });
  }
  for (std::thread& t : runs) t.join();
  for (const std::string& e : run_errors) ASSERT_EQ(e, "");

  Cluster cluster(2, "-t 1 -c 4096 --parallel 4");
  ASSERT_TRUE(cluster.ready());
  ASSERT_EQ(cluster.replicas().size(), 2u) << cluster.log();
  ASSERT_GT(cluster.haproxy_pid(), 0) << cluster.log();
  const Cluster::Replica victim = cluster.replicas()[1], survivor = cluster.replicas()[0];

  std::atomic<int> next{0};
  std::atomic<bool> killing{false};    // the kill has begun: replies may now come from elsewhere
  std::atomic<bool> dead{false};       // the victim is gone: requests from now on must not fail
  double victim_prompt = 0, victim_reused = 0;
  std::mutex mu;
  std::vector<std::string> failures;
  std::map<int, std::set<std::string>> doc_replicas_before, doc_replicas_after;
  int client_retries = 0;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", cluster.port());
      c.set_read_timeout(std::chrono::seconds(120));
      for (int i; (i = next++) < kRequests;) {
        if (i == kKillAt) {  // mid-run: the others keep sending meanwhile
          killing = true;
          victim_prompt = replica_metric(victim.port, "fulgur_prompt_tokens_total");
          victim_reused = replica_metric(victim.port, "fulgur_prompt_tokens_reused_total");
          kill(victim.pid, SIGKILL);
          while (!process_gone(victim.pid)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          dead = true;
        }
        const int p = (i * 7) % static_cast<int>(prompts.size());  // documents interleaved
        const bool stream = i % 2 == 1;
        const json body = {{"prompt", prompts[p]}, {"max_tokens", kTokens}, {"temperature", 0}, {"stream", stream}};
        const bool after_death = dead;
        std::string outcome;
        for (int attempt = 0; attempt < 2; ++attempt) {
          const bool sent_after_death = dead;
          auto res = c.Post("/v1/completions", body.dump(), "application/json");
          std::string got;
          if (!res) {
            outcome = "error " + httplib::to_string(res.error());
          } else if (res->status != 200) {
            outcome = "status " + std::to_string(res->status) + ": " + res->body;
          } else {
            try {
              got = stream ? test::read_sse(res->body).text : json::parse(res->body)["choices"][0]["text"].get<std::string>();
              outcome = got == want[p] ? "" : "text '" + got + "', want '" + want[p] + "'";
            } catch (const std::exception& e) {
              outcome = std::string("unreadable reply: ") + e.what();
            }
          }
          std::lock_guard<std::mutex> lk(mu);
          if (outcome.empty()) {
            // Replies that crossed the kill (retried by HAProxy or by the client) say nothing
            // about affinity.
            const std::string replica = res->get_header_value("X-Fulgur-Replica");
            if (sent_after_death) doc_replicas_after[p / kQuestions].insert(replica);
            if (!killing) doc_replicas_before[p / kQuestions].insert(replica);
            break;
          }
          // Only a reply the victim was writing when it died may be lost (a proxy cannot
          // replay half a response); its client retries once.
          if (after_death || attempt == 1) {
            failures.push_back("request " + std::to_string(i) + (after_death ? " (after the kill)" : "") + ": " + outcome);
            break;
          }
          ++client_retries;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_TRUE(dead);
  EXPECT_LE(client_retries, kClients) << "more retries than requests could have been in flight";

  // Affinity: until the kill each document went to one replica, and both replicas served;
  // after it, everything went to the survivor.
  std::set<std::string> used;
  for (const auto& [doc, replicas] : doc_replicas_before) {
    EXPECT_EQ(replicas.size(), 1u) << "document " << doc << " went to " << replicas.size() << " replicas";
    used.insert(replicas.begin(), replicas.end());
  }
  EXPECT_EQ(used, (std::set<std::string>{"r1", "r2"}));
  for (const auto& [doc, replicas] : doc_replicas_after) {
    EXPECT_EQ(replicas, std::set<std::string>{"r1"}) << "document " << doc;
  }
  const double prompt = victim_prompt + replica_metric(survivor.port, "fulgur_prompt_tokens_total");
  const double reused = victim_reused + replica_metric(survivor.port, "fulgur_prompt_tokens_reused_total");
  ASSERT_GT(prompt, 0);
  EXPECT_GT(reused, 0);
  std::printf("cluster: %d requests, %d client retries (replies cut by the kill); prompt-cache hits: %.0f of %.0f "
              "prompt tokens (%.1f %%)\n",
              kRequests, client_retries, reused, prompt, 100.0 * reused / prompt);
  RecordProperty("prompt_tokens_reused_share", std::to_string(reused / prompt));

  // SIGTERM to the script stops HAProxy and the replica left.
  cluster.stop();
  for (pid_t pid : {cluster.haproxy_pid(), survivor.pid}) {
    EXPECT_TRUE(process_gone(pid)) << "pid " << pid << " outlived the script";
  }
}

// Bad arguments get one clear line and status 2, before anything starts.
TEST(ServeCluster, BadArgumentsAreRefusedClearly) {
  const std::string script = std::string(FULGUR_SOURCE_DIR) + "/scripts/serve-cluster.sh";
  const std::string dir = test::make_cli_temp_dir();
  const std::pair<std::string, std::string> cases[] = {
      {"-n 2 --port 8080", "-m MODEL is required (--help)"},
      {"-m /nonexistent.gguf -n 2 --port 8080", "no model file '/nonexistent.gguf'"},
      {"-m '" + model() + "' -n 0 --port 8080", "-n wants 1 to 64 replicas, not '0'"},
      {"-m '" + model() + "' -n 2 --port 99999", "--port wants 1 to 65535, not '99999'"},
      {"-m '" + model() + "' -n 2 --port 8080 --hash-bytes x", "--hash-bytes wants a positive number, not 'x'"},
      {"-m '" + model() + "' -n 2 --port", "--port needs a value"},
  };
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(args);
    const int raw = std::system(("bash '" + script + "' " + args + " > '" + dir + "/out' 2> '" + dir + "/err'").c_str());
    ASSERT_TRUE(WIFEXITED(raw));
    EXPECT_EQ(WEXITSTATUS(raw), 2);
    EXPECT_EQ(slurp(dir + "/err"), "serve-cluster.sh: " + message + "\n");
  }
}

}  // namespace
}  // namespace fulgur
