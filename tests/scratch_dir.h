// Fresh directories for test files, removed when the test process exits.
//
// ctest runs every test in its own process, so a fixture that writes its models once per
// process writes them once per test. Left behind, those directories filled /tmp: 50 GB of
// DFlash fixtures and 8 GB of CLI ones after a few days of runs, until a tile-cache write
// failed for lack of space. FULGUR_KEEP_TEST_FILES=1 keeps them, to look at after a failure.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace fulgur::test {

// A new directory `<gtest temp dir>/<stem>_XXXXXX`; throws if it cannot be made.
inline std::string scratch_dir(const std::string& stem) {
  struct Made {
    std::mutex mu;
    std::vector<std::string> dirs;
    ~Made() {
      if (std::getenv("FULGUR_KEEP_TEST_FILES") != nullptr) return;
      for (const std::string& d : dirs) {
        std::error_code ec;  // best effort: a test may have removed it already
        std::filesystem::remove_all(d, ec);
      }
    }
  };
  static Made made;
  std::string pattern = ::testing::TempDir() + "/" + stem + "_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  const std::lock_guard<std::mutex> lock(made.mu);
  made.dirs.push_back(pattern);
  return pattern;
}

}  // namespace fulgur::test
