// A Hugging Face config.json with typed getters whose errors name the file and field:
//   "<dir>/config.json: field 'num_hidden_layers' is missing"
//   "<dir>/config.json: field 'num_hidden_layers' has type string, expected integer"
// Nested objects (text_config, rope_parameters, block_configs[i]) are HfConfigs of their own
// whose errors spell the full path ('text_config.hidden_size'). JSON null counts as absent for
// has() and the defaulted getters (HF writes "rope_scaling": null), and is an error for the
// required ones. load() also reads Python's json dialect (NaN, Infinity, which HF writes for
// Mamba's time_step_limit) as null and +-DBL_MAX.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulgur {

class HfConfig {
 public:
  HfConfig() = default;
  // `source` names the file in errors; `prefix` is the dotted path of a nested object.
  HfConfig(nlohmann::json json, std::string source, std::string prefix = "");
  // `path` is config.json itself or a directory holding it. Throws fulgur::Error naming the
  // file when it is missing, not JSON, or not an object.
  static HfConfig load(const std::string& path);
  // The same from JSON text (Python's dialect too); `source` names it in errors.
  static HfConfig parse(std::string_view text, const std::string& source);

  const nlohmann::json& json() const { return json_; }
  const std::string& source() const { return source_; }
  // Present and not null.
  bool has(std::string_view key) const;

  // Integers: JSON integers, or floats with an integral value (10000.0); bools are rejected.
  int64_t get_int(std::string_view key) const;
  int64_t get_int(std::string_view key, int64_t fallback) const;
  // A dimension or count: an integer in [1, 2^31).
  int64_t get_dim(std::string_view key) const;
  int64_t get_dim(std::string_view key, int64_t fallback) const;
  // Floats: any JSON number.
  double get_float(std::string_view key) const;
  double get_float(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key) const;
  bool get_bool(std::string_view key, bool fallback) const;
  std::string get_string(std::string_view key) const;
  std::string get_string(std::string_view key, const std::string& fallback) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<double> get_float_array(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  // A nested object.
  HfConfig get_object(std::string_view key) const;
  // A list of objects (Nemotron-H Puzzle block_configs).
  std::vector<HfConfig> get_object_array(std::string_view key) const;

  // Field that may be a scalar or an array (eos_token_id): a scalar gives a 1-element vector.
  std::vector<int64_t> get_int_or_int_array(std::string_view key) const;

 private:
  const nlohmann::json& required(std::string_view key) const;
  [[noreturn]] void type_error(std::string_view key, const nlohmann::json& value,
                               std::string_view expected) const;
  std::string field(std::string_view key) const;

  nlohmann::json json_ = nlohmann::json::object();
  std::string source_ = "config.json";
  std::string prefix_;
};

// The JSON type as errors spell it: integer, float, string, boolean, array, object, null.
std::string_view json_type_name(const nlohmann::json& value);

// Writes `json` (2-space indented) to `path` atomically (temporary file + rename).
void write_json_file(const std::string& path, const nlohmann::json& json);

}  // namespace fulgur
