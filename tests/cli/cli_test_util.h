// Runs the built `fulgur` binary (FULGUR_BINARY) as a subprocess and captures its stdout, stderr
// and exit status, for tests of the command-line interface.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "scratch_dir.h"

namespace fulgur::test {

struct RunResult {
  int status = -1;  // exit status; -1 when the process did not exit normally (e.g. a crash)
  std::string out;
  std::string err;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory, removed at exit.
inline std::string make_cli_temp_dir() { return scratch_dir("fulgur_cli"); }

// `args` is appended to the binary path as-is (quote paths with single quotes).
inline RunResult run_fulgur(const std::string& args, const std::string& dir) {
  const std::string out_path = dir + "/stdout.txt";
  const std::string err_path = dir + "/stderr.txt";
  const std::string cmd = std::string("'") + FULGUR_BINARY + "' " + args + " > '" + out_path +
                          "' 2> '" + err_path + "'";
  const int raw = std::system(cmd.c_str());
  RunResult r;
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

// The fixture of CLI tests that generate: two tiny synth models (seeds 1 and 2, built-in
// vocabulary) written once per test suite into a temporary folder.
class TinyModelsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = make_cli_temp_dir();
    for (int seed : {1, 2}) {
      const RunResult r = run_fulgur("synth --shape tiny --tokenizer builtin --seed " + std::to_string(seed) +
                                         " -o '" + model(seed) + "'",
                                     dir_);
      ASSERT_EQ(r.status, 0) << r.err;
    }
  }
  static std::string model(int seed) { return dir_ + "/tiny" + std::to_string(seed) + ".gguf"; }
  static inline std::string dir_;
};

}  // namespace fulgur::test
