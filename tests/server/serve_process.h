// Runs `fulgur serve` (FULGUR_BINARY) as a child process on an ephemeral port (--port 0: the
// kernel picks a free one, which the server prints), so tests run in parallel never collide;
// the destructor stops it with SIGTERM.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "scratch_dir.h"

namespace fulgur::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// POSTs body to path and hands the response body to `on_data` as it arrives; on_data returning
// false closes the connection (a client that goes away mid-stream).
inline httplib::Result post_streaming(httplib::Client& c, const std::string& path, const std::string& body,
                                      std::function<bool(const char*, size_t)> on_data) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [on_data](const char* data, size_t n, uint64_t, uint64_t) { return on_data(data, n); };
  return c.send(req);
}

// Starts `argv` (argv[0] a path) as a child whose stdout and stderr go to log + ".out" / ".err";
// returns its pid.
inline pid_t spawn_logged(std::vector<std::string> argv_s, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen((log + ".out").c_str(), "w", stdout) || !freopen((log + ".err").c_str(), "w", stderr)) _exit(127);
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

class ServeProcess {
 public:
  // args: everything after `fulgur serve --port 0`, split on spaces (no quoting needed here).
  explicit ServeProcess(const std::string& args) {
    static const std::string dir = fulgur::test::scratch_dir("fulgur_serve");
    static int counter = 0;
    log_ = dir + "/" + std::to_string(counter++);
    std::vector<std::string> argv_s = {FULGUR_BINARY, "serve", "--port", "0"};
    std::istringstream in(args);
    for (std::string a; in >> a;) argv_s.push_back(a);
    pid_ = spawn_logged(std::move(argv_s), log_);
    const std::regex re("http://127\\.0\\.0\\.1:([0-9]+)");
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
      std::smatch m;
      const std::string out = slurp(log_ + ".out");
      if (std::regex_search(out, m, re)) {
        port_ = std::stoi(m[1]);
        return;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "fulgur serve did not start: " << slurp(log_ + ".err");
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // Waits for the server to exit (after the test signalled it): its exit status, or -1 when a
  // signal ended it. The destructor then has nothing to stop.
  int wait_exit() {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const { return slurp(log_ + ".err"); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(std::chrono::seconds(120));
    return c;
  }
  // Resident memory of the server process, KiB (VmRSS).
  long rss_kib() const {
    std::istringstream s(slurp("/proc/" + std::to_string(pid_) + "/status"));
    for (std::string line; std::getline(s, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }
  // A sample of /metrics, e.g. metric("fulgur_slots_busy").
  double metric(const std::string& name_and_labels) const {
    auto res = client().Get("/metrics");
    if (!res) return -1;
    std::istringstream s(res->body);
    for (std::string line; std::getline(s, line);) {
      if (line.rfind(name_and_labels + " ", 0) == 0) return std::stod(line.substr(name_and_labels.size() + 1));
    }
    return -1;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace fulgur::test
