#include "jinja/oracle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace fulgur::test {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::string temp_path(const std::string& stem) {
  return testing::TempDir() + "/fulgur_chat_" + std::to_string(getpid()) + "_" + stem;
}

}  // namespace

std::string oracle_unavailable_reason() {
  static const std::string reason = [] {
    if (access(kPython, X_OK) != 0) return std::string("/usr/bin/python3 not found");
    const std::string cmd = std::string(kPython) + " -c 'import jinja2' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      return std::string(
          "python3-jinja2 is not installed (apt-get install python3-jinja2); oracle comparison "
          "skipped");
    }
    return std::string();
  }();
  return reason;
}

std::vector<OracleResult> run_oracle(const std::vector<OracleCase>& cases) {
  nlohmann::ordered_json request;
  request["cases"] = nlohmann::ordered_json::array();
  for (const auto& c : cases)
    request["cases"].push_back({{"template", c.template_source}, {"context", c.context}});
  const std::string in_path = temp_path("cases.json");
  const std::string err_path = temp_path("stderr.txt");
  {
    std::ofstream f(in_path, std::ios::binary);
    f << request.dump();
  }
  const std::string cmd = std::string(kPython) + " " + FULGUR_SOURCE_DIR +
                          "/tests/oracle/render_template.py '" + in_path + "' 2>'" + err_path + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  std::remove(in_path.c_str());
  std::string err;
  {
    std::ifstream f(err_path, std::ios::binary);
    err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  std::remove(err_path.c_str());
  if (status != 0)
    throw std::runtime_error("oracle script failed (status " + std::to_string(status) +
                             "): " + err);
  const auto results = nlohmann::json::parse(out);
  if (!results.is_array() || results.size() != cases.size())
    throw std::runtime_error("oracle returned a malformed result: " + out);
  std::vector<OracleResult> parsed;
  for (const auto& r : results) {
    if (r.contains("output"))
      parsed.push_back({true, r["output"].get<std::string>()});
    else
      parsed.push_back({false, r.value("error", std::string("?"))});
  }
  return parsed;
}

}  // namespace fulgur::test
