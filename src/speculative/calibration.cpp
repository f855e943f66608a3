#include "speculative/calibration.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fulgur {
namespace {

constexpr int kEceBins = 20;
// The STS grid: temperatures from 1/20 to 20, evenly spaced in log.
constexpr double kMinT = 0.05, kMaxT = 20.0;
constexpr int kGrid = 121;

double logit(double c) {
  const double p = std::clamp(c, 1e-7, 1.0 - 1e-7);
  return std::log(p / (1.0 - p));
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

bool reaches(const StsSample& s, int k) {
  if (static_cast<int>(s.confidence.size()) <= k) return false;
  for (int i = 0; i <= k; ++i) {
    if (!std::isfinite(s.confidence[static_cast<size_t>(i)])) return false;
  }
  return true;
}

// The cumulative product at position k with T_k = t_k and the earlier positions' temperatures.
double survival(const StsSample& s, std::span<const float> temperatures, int k, double t_k) {
  double a = 1.0;
  for (int i = 0; i <= k; ++i) {
    double t = 1.0;
    if (i == k && t_k > 0.0) {
      t = t_k;
    } else if (!temperatures.empty()) {
      t = temperatures[std::min(static_cast<size_t>(i), temperatures.size() - 1)];
    }
    a *= sigmoid(logit(s.confidence[static_cast<size_t>(i)]) / t);
  }
  return a;
}

double ece_at(std::span<const StsSample> samples, std::span<const float> temperatures, int k, double t_k) {
  double sum_p[kEceBins] = {}, sum_y[kEceBins] = {};
  int64_t count[kEceBins] = {}, n = 0;
  for (const StsSample& s : samples) {
    if (!reaches(s, k)) continue;
    const double a = survival(s, temperatures, k, t_k);
    const int b = std::min(kEceBins - 1, static_cast<int>(a * kEceBins));
    sum_p[b] += a;
    sum_y[b] += s.n_accepted > k ? 1.0 : 0.0;
    ++count[b];
    ++n;
  }
  if (n == 0) return 0.0;
  double ece = 0.0;
  for (int b = 0; b < kEceBins; ++b) ece += std::abs(sum_p[b] - sum_y[b]);
  return ece / static_cast<double>(n);
}

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  FULGUR_CHECK(j.is_object() && j.contains(key), where, ": missing field '", key, "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": field '", key, "' has the wrong type (", e.what(), ")");
  }
}

}  // namespace

double survival_ece(std::span<const StsSample> samples, std::span<const float> temperatures, int k) {
  return ece_at(samples, temperatures, k, 0.0);
}

StsFit fit_temperatures(std::span<const StsSample> samples, int64_t min_samples) {
  StsFit fit;
  for (int k = 0;; ++k) {
    int64_t n = 0;
    for (const StsSample& s : samples) n += reaches(s, k);
    if (n < std::max<int64_t>(min_samples, 1)) break;
    fit.samples.push_back(n);
    fit.ece_before.push_back(ece_at(samples, {}, k, 0.0));  // the raw head
    // T = 1 first, so that a grid point no better than the raw head leaves it unchanged.
    double best_t = 1.0, best = ece_at(samples, fit.temperatures, k, 1.0);
    for (int g = 0; g < kGrid; ++g) {
      const double t = kMinT * std::pow(kMaxT / kMinT, static_cast<double>(g) / (kGrid - 1));
      const double e = ece_at(samples, fit.temperatures, k, t);
      if (e < best - 1e-12) {
        best = e;
        best_t = t;
      }
    }
    fit.temperatures.push_back(static_cast<float>(best_t));
    fit.ece_after.push_back(best);
  }
  return fit;
}

Calibration Calibration::read(const std::string& path) {
  std::ifstream in(path);
  FULGUR_CHECK(in.good(), path, ": cannot open the calibration file");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": not JSON (", e.what(), ")");
  }
  FULGUR_CHECK(j.is_object() && j.value("format", "") == "fulgur-calibration", path,
               ": not a fulgur calibration file (\"format\" must be \"fulgur-calibration\")");
  FULGUR_CHECK(field<int>(j, "version", path) == 1, path, ": calibration version ",
               field<int>(j, "version", path), " (this fulgur reads version 1)");
  Calibration c;
  const nlohmann::json& m = field<nlohmann::json>(j, "model", path);
  c.model_file = field<std::string>(m, "file", path + ": model");
  c.model_size = field<uint64_t>(m, "size", path + ": model");
  const nlohmann::json tables = j.value("tables", nlohmann::json::array());
  FULGUR_CHECK(tables.is_array(), path, ": 'tables' must be an array");
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string where = path + ": tables[" + std::to_string(i) + "]";
    CalibrationTable t;
    t.threads = field<int>(tables[i], "threads", where);
    t.isa = field<std::string>(tables[i], "isa", where);
    t.depth = field<int64_t>(tables[i], "depth", where);
    t.step.rows = field<std::vector<int64_t>>(tables[i], "rows", where);
    t.step.seconds = field<std::vector<double>>(tables[i], "seconds", where);
    FULGUR_CHECK(t.threads >= 1 && t.depth >= 0 && !t.step.empty(), where,
                 ": needs threads >= 1, depth >= 0 and at least one row count");
    t.step.validate(where.c_str());
    c.tables.push_back(std::move(t));
  }
  const nlohmann::json drafts = j.value("drafts", nlohmann::json::array());
  FULGUR_CHECK(drafts.is_array(), path, ": 'drafts' must be an array");
  for (size_t i = 0; i < drafts.size(); ++i) {
    const std::string where = path + ": drafts[" + std::to_string(i) + "]";
    DraftCalibration d;
    d.file = field<std::string>(drafts[i], "file", where);
    d.size = field<uint64_t>(drafts[i], "size", where);
    d.text = drafts[i].value("text", "");
    d.drafts = drafts[i].value("drafts", int64_t{0});
    d.temperatures = field<std::vector<float>>(drafts[i], "temperatures", where);
    for (float t : d.temperatures) {
      FULGUR_CHECK(std::isfinite(t) && t > 0.0f, where, ": temperature ", t, " (must be > 0)");
    }
    d.ece_before = drafts[i].value("ece_before", std::vector<double>{});
    d.ece_after = drafts[i].value("ece_after", std::vector<double>{});
    c.drafts.push_back(std::move(d));
  }
  return c;
}

void Calibration::write(const std::string& path) const {
  nlohmann::json j;
  j["format"] = "fulgur-calibration";
  j["version"] = 1;
  j["model"] = {{"file", model_file}, {"size", model_size}};
  j["tables"] = nlohmann::json::array();
  for (const CalibrationTable& t : tables) {
    j["tables"].push_back({{"threads", t.threads}, {"isa", t.isa}, {"depth", t.depth},
                           {"rows", t.step.rows}, {"seconds", t.step.seconds}});
  }
  j["drafts"] = nlohmann::json::array();
  for (const DraftCalibration& d : drafts) {
    j["drafts"].push_back({{"file", d.file}, {"size", d.size}, {"text", d.text}, {"drafts", d.drafts},
                           {"temperatures", d.temperatures}, {"ece_before", d.ece_before},
                           {"ece_after", d.ece_after}});
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    FULGUR_CHECK(out.good(), tmp, ": cannot write the calibration file");
    out << j.dump(1) << "\n";
    FULGUR_CHECK(out.good(), tmp, ": write failed");
  }
  std::filesystem::rename(tmp, path);
}

const CalibrationTable* Calibration::table(int threads, const std::string& isa) const {
  for (const CalibrationTable& t : tables) {
    if (t.threads == threads && t.isa == isa) return &t;
  }
  return nullptr;
}

const DraftCalibration* Calibration::draft(const std::string& file, uint64_t size) const {
  for (const DraftCalibration& d : drafts) {
    if (d.file == base_name(file) && d.size == size) return &d;
  }
  return nullptr;
}

void Calibration::set(CalibrationTable table) {
  for (CalibrationTable& t : tables) {
    if (t.threads == table.threads && t.isa == table.isa) {
      t = std::move(table);
      return;
    }
  }
  tables.push_back(std::move(table));
}

void Calibration::set(DraftCalibration draft) {
  draft.file = base_name(draft.file);
  for (DraftCalibration& d : drafts) {
    if (d.file == draft.file) {
      d = std::move(draft);
      return;
    }
  }
  drafts.push_back(std::move(draft));
}

std::string calibration_path(const std::string& model_path) { return model_path + ".calibration.json"; }

}  // namespace fulgur
