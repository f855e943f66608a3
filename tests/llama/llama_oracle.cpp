#include "llama/llama_oracle.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "gguf/gguf_reader.h"
#include "model/context.h"
#include "model/desc.h"
#include "model/weights.h"

namespace fulgur::test {

namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

const std::string kOracleScript = std::string(FULGUR_SOURCE_DIR) + "/tests/oracle/llama_greedy.mjs";

}  // namespace

Proc run_shell(const std::string& cmd, const std::string& dir) {
  const std::string out_path = dir + "/proc_stdout.txt", err_path = dir + "/proc_stderr.txt";
  const int raw = std::system((cmd + " > " + quoted(out_path) + " 2> " + quoted(err_path)).c_str());
  Proc p;
  if (raw != -1 && WIFEXITED(raw)) p.status = WEXITSTATUS(raw);
  p.out = read_all(out_path);
  p.err = read_all(err_path);
  return p;
}

std::string run_fulgur_ok(const std::string& args, const std::string& dir) {
  const Proc p = run_shell(quoted(FULGUR_BINARY) + " " + args, dir);
  EXPECT_EQ(p.status, 0) << "fulgur " << args << "\n" << p.err;
  return p.out;
}

std::string synth_file(const std::string& arch, const std::string& shape, const std::string& type,
                       const std::string& dir, const std::string& extra) {
  std::string name = arch + "-" + shape + "-" + type + extra;
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  const std::string path = dir + "/" + name + ".gguf";
  run_fulgur_ok("synth --arch " + arch + " --shape " + shape + " --seed 11 --type " + type +
                    " --tokenizer builtin " + extra + " -o " + quoted(path),
                dir);
  return path;
}

std::string llama_oracle_missing() {
  const std::string root = FULGUR_SOURCE_DIR;
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not on PATH";
  if (!fs::exists(root + "/node_modules/node-llama-cpp/package.json"))
    return "node-llama-cpp is not installed (run `npm ci` in the repository root)";
  if (!fs::exists(root + "/node_modules/@node-llama-cpp/linux-x64/package.json"))
    return "@node-llama-cpp/linux-x64 (llama.cpp's prebuilt CPU build) is not installed";
  return "";
}

std::string llama_library() {
  const fs::path root = fs::path(FULGUR_SOURCE_DIR) / "node_modules" / "@node-llama-cpp";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return "";
  // @node-llama-cpp/linux-x64*/bins/<platform>/libllama*.so; the plain CPU package first.
  std::vector<fs::path> found;
  for (const auto& pkg : fs::directory_iterator(root, ec)) {
    if (!pkg.path().filename().string().starts_with("linux-x64")) continue;
    const fs::path bins = pkg.path() / "bins";
    if (!fs::is_directory(bins, ec)) continue;
    for (const auto& plat : fs::directory_iterator(bins, ec))
      for (const auto& f : fs::directory_iterator(plat.path(), ec)) {
        const std::string name = f.path().filename().string();
        if (name.starts_with("libllama") && name.find(".so") != std::string::npos &&
            !name.starts_with("libllama-common"))
          found.push_back(f.path());
      }
  }
  if (found.empty()) return "";
  std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
    const bool ca = a.string().find("/linux-x64/bins/") != std::string::npos;
    const bool cb = b.string().find("/linux-x64/bins/") != std::string::npos;
    return ca != cb ? ca : a < b;
  });
  return found.front().string();
}

void llama_quantize(const std::string& in, const std::string& out, const std::string& ftype, const std::string& dir,
                    const std::string& legacy_imatrix, const std::string& options) {
  const std::string imatrix = legacy_imatrix.empty() ? "" : " 1 " + quoted(legacy_imatrix);
  const Proc p = run_shell(quoted(LLAMA_QUANTIZE_BINARY) + " " + options + (options.empty() ? "" : " ") +
                               quoted(llama_library()) + " " + quoted(in) + " " +
                               quoted(out) + " " + ftype + imatrix,
                           dir);
  EXPECT_EQ(p.status, 0) << "llama_quantize " << in << " -> " << out << " " << ftype << "\n" << p.err;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

std::vector<std::pair<int32_t, float>> top_k_of(const float* logits, int64_t n_vocab, int k) {
  std::vector<int32_t> idx(n_vocab);
  std::iota(idx.begin(), idx.end(), 0);
  const int64_t kk = std::min<int64_t>(k, n_vocab);
  std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<std::pair<int32_t, float>> out;
  for (int64_t i = 0; i < kk; ++i) out.emplace_back(idx[i], logits[idx[i]]);
  return out;
}

GreedyRun llama_greedy(const std::string& model, const std::vector<int32_t>& prompt, int n, int top_k,
                       const std::string& dir, const std::string& extra) {
  const std::string cmd = "node " + quoted(kOracleScript) + " --model " + quoted(model) + " --prompt-ids " +
                          join_ids(prompt) + " --n " + std::to_string(n) + " --top " + std::to_string(top_k) +
                          " --threads 1 --all-logits " + extra;
  const Proc p = run_shell(cmd, dir);
  GreedyRun r;
  EXPECT_EQ(p.status, 0) << cmd << "\n" << p.err;
  if (p.status != 0) return r;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  r.tokens = j.at("tokens").get<std::vector<int32_t>>();
  for (const auto& step : j.at("steps")) {
    auto& row = r.top.emplace_back();
    for (const auto& pair : step) row.emplace_back(pair.at(0).get<int32_t>(), pair.at(1).get<float>());
  }
  for (const auto& v : j.at("logits")) {
    // A missing entry (null) would mean node-llama-cpp dropped a token; NaN fails every check.
    r.logits.push_back(v.is_null() ? std::numeric_limits<float>::quiet_NaN() : v.get<float>());
  }
  return r;
}

GreedyRun fulgur_greedy(const std::string& path, const std::vector<int32_t>& prompt, int n, int top_k) {
  const Model model(path);
  const int64_t nv = model.n_vocab();
  Context ctx(model, {.n_ctx = static_cast<int64_t>(prompt.size()) + n + 8,
                      .n_batch = static_cast<int64_t>(prompt.size()), .n_threads = 1});
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  ctx.decode(batch);
  GreedyRun r;
  const float* logits = ctx.logits(batch.size() - 1);
  r.logits.assign(logits, logits + nv);
  for (int step = 0; step < n; ++step) {
    r.top.push_back(top_k_of(logits, nv, top_k));
    r.tokens.push_back(r.top.back().front().first);
    if (step + 1 == n) break;
    batch.clear();
    batch.add(r.tokens.back(), static_cast<int32_t>(prompt.size() + step), 0, true);
    ctx.decode(batch);
    logits = ctx.logits(0);
  }
  return r;
}

double min_router_gap(const std::string& path, const std::vector<int32_t>& tokens) {
  const Model model(path);
  const ModelDesc& d = model.desc();
  const int64_t E = d.n_embd, n = static_cast<int64_t>(tokens.size());
  std::vector<int> moe_layers;
  for (int l = 0; l < d.n_layer(); ++l) {
    if (d.layers[static_cast<size_t>(l)].ffn == FfnKind::kMoe) moe_layers.push_back(l);
  }
  if (moe_layers.empty()) return INFINITY;
  Context ctx(model, {.n_ctx = n + 8, .n_batch = n, .n_threads = 1});
  ctx.set_taps(moe_layers);
  Batch batch;
  for (int64_t i = 0; i < n; ++i) batch.add(tokens[i], static_cast<int32_t>(i), 0, false);
  ctx.decode(batch);
  const GgufReader& g = model.gguf();
  double gap = INFINITY;
  for (size_t t = 0; t < moe_layers.size(); ++t) {
    const int l = moe_layers[t];
    const MoeDesc& e = d.layers[static_cast<size_t>(l)].moe;
    const std::string p = "blk." + std::to_string(l) + ".";
    const GgufTensorInfo& router = g.tensor(p + "ffn_gate_inp.weight");
    EXPECT_EQ(router.type, DType::kF32) << "the router of layer " << l << " is not f32";
    const float* w = reinterpret_cast<const float*>(router.data);
    const float* bias = e.selection_bias ? reinterpret_cast<const float*>(g.tensor(p + "exp_probs_b.bias").data) : nullptr;
    const float* norm = model.weights().layers[static_cast<size_t>(l)].ffn_norm.data;
    for (int64_t r = 0; r < n; ++r) {
      const float* x = ctx.tap(static_cast<int>(t), r);
      double ss = 0;
      for (int64_t c = 0; c < E; ++c) ss += static_cast<double>(x[c]) * x[c];
      const double inv = 1.0 / std::sqrt(ss / E + d.rms_eps);
      std::vector<double> prob(static_cast<size_t>(e.n_expert));
      double top = -INFINITY, z = 0;
      for (int64_t k = 0; k < e.n_expert; ++k) {
        double a = 0;
        for (int64_t c = 0; c < E; ++c) a += static_cast<double>(w[k * E + c]) * x[c] * inv * norm[c];
        prob[k] = a;
        top = std::max(top, a);
      }
      for (double& v : prob) {
        if (e.gating == kernels::MoeGating::kSigmoid) {
          v = 1.0 / (1.0 + std::exp(-v));
        } else {
          z += v = std::exp(v - top);
        }
      }
      for (int64_t k = 0; k < e.n_expert; ++k) {
        if (e.gating != kernels::MoeGating::kSigmoid) prob[k] /= z;
        if (bias != nullptr) prob[k] += bias[k];
      }
      std::sort(prob.begin(), prob.end(), std::greater<double>());
      if (e.n_expert_used < e.n_expert) gap = std::min(gap, prob[e.n_expert_used - 1] - prob[e.n_expert_used]);
    }
  }
  return gap;
}

std::vector<int32_t> fulgur_run_cli(const std::string& model, const std::vector<int32_t>& prompt, int n,
                                    const std::string& dir) {
  const std::string out = run_fulgur_ok("run -m " + quoted(model) + " --prompt-ids " + join_ids(prompt) + " -n " +
                                            std::to_string(n) + " -c " + std::to_string(prompt.size() + n + 8) +
                                            " --temp 0 --ignore-eos --json -t 1",
                                        dir);
  if (out.empty()) return {};
  return nlohmann::json::parse(out).at("tokens").get<std::vector<int32_t>>();
}

}  // namespace fulgur::test
