// Runs tests/oracle/render_template.py (Debian's python3-jinja2 with HF's chat-template
// settings) on a batch of (template, context) cases, so the C++ renderer can be compared
// byte for byte against an implementation nobody here wrote.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fulgur::test {

struct OracleCase {
  std::string template_source;
  nlohmann::ordered_json context;
};

struct OracleResult {
  bool ok = false;
  std::string output;  // rendering when ok, Python's error message otherwise
};

// Empty string when /usr/bin/python3 can import jinja2, else why not (for GTEST_SKIP).
std::string oracle_unavailable_reason();

// Renders every case in one python process. Throws std::runtime_error if the script fails.
std::vector<OracleResult> run_oracle(const std::vector<OracleCase>& cases);

}  // namespace fulgur::test
