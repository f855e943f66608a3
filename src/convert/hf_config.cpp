#include "convert/hf_config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "convert/safetensors_writer.h"
#include "core/error.h"

namespace fulgur {

using Json = nlohmann::json;

std::string_view json_type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "float";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "binary";
}

namespace {

bool is_integral(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18;
}

int64_t to_int(const Json& v) {
  return v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
}

// Python's json module writes the non-standard literals NaN, Infinity and -Infinity (HF saves
// Mamba configs with "time_step_limit": [0.0, Infinity]). Outside strings they become null and
// +-DBL_MAX, which strict JSON parsers (nlohmann) accept.
std::string from_python_json(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const std::string_view rest(text.data() + i, text.size() - i);
    if (rest.starts_with("NaN")) {
      out += "null";
      i += 2;
    } else if (rest.starts_with("Infinity")) {
      out += "1.7976931348623157e308";
      i += 7;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

HfConfig::HfConfig(Json j, std::string source, std::string prefix)
    : json_(std::move(j)), source_(std::move(source)), prefix_(std::move(prefix)) {
  FULGUR_CHECK(json_.is_object(), source_, ": ", prefix_.empty() ? "top level" : prefix_,
               " has type ", json_type_name(json_), ", expected object");
}

HfConfig HfConfig::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) file = (fs::path(path) / "config.json").string();
  std::ifstream in(file, std::ios::binary);
  FULGUR_CHECK(in, "cannot open '", file, "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(text, file);
}

HfConfig HfConfig::parse(std::string_view text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    try {
      j = Json::parse(from_python_json(std::string(text)));
    } catch (const Json::exception&) {
      fail(source, ": not valid JSON: ", e.what());
    }
  }
  return HfConfig(std::move(j), source);
}

std::string HfConfig::field(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : cat(prefix_, ".", key);
}

bool HfConfig::has(std::string_view key) const {
  const auto it = json_.find(key);
  return it != json_.end() && !it->is_null();
}

const Json& HfConfig::required(std::string_view key) const {
  const auto it = json_.find(key);
  FULGUR_CHECK(it != json_.end(), source_, ": field '", field(key), "' is missing");
  return *it;
}

void HfConfig::type_error(std::string_view key, const Json& value,
                          std::string_view expected) const {
  std::string shown = value.dump();
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  fail(source_, ": field '", field(key), "' has type ", json_type_name(value), " (", shown,
       "), expected ", expected);
}

int64_t HfConfig::get_int(std::string_view key) const {
  const Json& v = required(key);
  if (!is_integral(v)) type_error(key, v, "integer");
  return to_int(v);
}

int64_t HfConfig::get_int(std::string_view key, int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}

int64_t HfConfig::get_dim(std::string_view key) const {
  const int64_t v = get_int(key);
  FULGUR_CHECK(v > 0 && v < (int64_t{1} << 31), source_, ": field '", field(key), "' is ", v,
               "; expected a positive integer below 2^31");
  return v;
}

int64_t HfConfig::get_dim(std::string_view key, int64_t fallback) const {
  return has(key) ? get_dim(key) : fallback;
}

double HfConfig::get_float(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_number()) type_error(key, v, "number");
  return v.get<double>();
}

double HfConfig::get_float(std::string_view key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}

bool HfConfig::get_bool(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_boolean()) type_error(key, v, "boolean");
  return v.get<bool>();
}

bool HfConfig::get_bool(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

std::string HfConfig::get_string(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_string()) type_error(key, v, "string");
  return v.get<std::string>();
}

std::string HfConfig::get_string(std::string_view key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}

std::vector<int64_t> HfConfig::get_int_array(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_array()) type_error(key, v, "array of integers");
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!is_integral(v[i])) type_error(cat(key, "[", i, "]"), v[i], "integer");
    out.push_back(to_int(v[i]));
  }
  return out;
}

std::vector<double> HfConfig::get_float_array(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_array()) type_error(key, v, "array of numbers");
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number()) type_error(cat(key, "[", i, "]"), v[i], "number");
    out.push_back(v[i].get<double>());
  }
  return out;
}

std::vector<std::string> HfConfig::get_string_array(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_array()) type_error(key, v, "array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) type_error(cat(key, "[", i, "]"), v[i], "string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

HfConfig HfConfig::get_object(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_object()) type_error(key, v, "object");
  return HfConfig(v, source_, field(key));
}

std::vector<HfConfig> HfConfig::get_object_array(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_array()) type_error(key, v, "array of objects");
  std::vector<HfConfig> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_object()) type_error(cat(key, "[", i, "]"), v[i], "object");
    out.emplace_back(v[i], source_, cat(field(key), "[", i, "]"));
  }
  return out;
}

std::vector<int64_t> HfConfig::get_int_or_int_array(std::string_view key) const {
  const Json& v = required(key);
  if (v.is_array()) return get_int_array(key);
  if (!is_integral(v)) type_error(key, v, "integer or array of integers");
  return {to_int(v)};
}

void write_json_file(const std::string& path, const Json& j) {
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace fulgur
