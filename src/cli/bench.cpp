// `fulgur bench`: prefill and decode throughput like llama-bench's pp / tg tests, median and
// spread over repetitions.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/session.h"
#include "core/error.h"
#include "kernels/dispatch.h"

namespace fulgur::cli {
namespace {

struct BenchOptions {
  std::string model;
  int n_prompt = 512, n_gen = 128, threads = 0, reps = 3;
  bool json = false;
};

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {median, v.front(), v.back()};
}

int bench(const BenchOptions& o) {
  LoadedModel lm = load_model(o.model, false);
  const Model& m = *lm.model;
  Context ctx(m, {.n_ctx = o.n_prompt + o.n_gen + 1, .n_batch = std::max(1, o.n_prompt), .n_threads = o.threads});
  // Token ids are fixed pseudo-random values: the speed of a forward does not depend on them.
  std::vector<int32_t> ids(o.n_prompt + o.n_gen);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 2654435761u + 17) % m.n_vocab());
  std::vector<double> pp, tg;
  Batch batch;
  for (int rep = 0; rep < o.reps; ++rep) {
    ctx.kv().clear();
    if (o.n_prompt > 0) {
      batch.clear();
      for (int i = 0; i < o.n_prompt; ++i) batch.add(ids[i], i, 0, i + 1 == o.n_prompt);
      const double t0 = now_seconds();
      ctx.decode(batch);
      pp.push_back(o.n_prompt / (now_seconds() - t0));
    }
    if (o.n_gen > 0) {
      const double t0 = now_seconds();
      for (int i = 0; i < o.n_gen; ++i) {
        batch.clear();
        batch.add(ids[o.n_prompt + i], o.n_prompt + i, 0, true);
        ctx.decode(batch);
      }
      tg.push_back(o.n_gen / (now_seconds() - t0));
    }
  }
  const double gb = static_cast<double>(m.bytes_per_token()) / 1e9;
  nlohmann::json j;
  j["model"] = o.model;
  j["threads"] = ctx.pool().size();
  j["isa"] = isa_name(kernels::active_isa());
  j["reps"] = o.reps;
  j["weights_gb_per_token"] = gb;
  if (!pp.empty()) {
    const Stats s = stats(pp);
    j["n_prompt"] = o.n_prompt;
    j["prefill_tok_s"] = s.median;
    j["prefill_tok_s_min"] = s.min;
    j["prefill_tok_s_max"] = s.max;
  }
  if (!tg.empty()) {
    const Stats s = stats(tg);
    j["n_gen"] = o.n_gen;
    j["decode_tok_s"] = s.median;
    j["decode_tok_s_min"] = s.min;
    j["decode_tok_s_max"] = s.max;
    j["decode_gb_s"] = s.median * gb;
  }
  if (o.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model %s | %d threads | %s kernels | %.3f GB of weights per token | %d reps\n",
              o.model.c_str(), ctx.pool().size(), isa_name(kernels::active_isa()), gb, o.reps);
  std::printf("%-10s %12s %12s %12s\n", "test", "tok/s", "min", "max");
  if (!pp.empty()) {
    const Stats s = stats(pp);
    std::printf("pp%-8d %12.2f %12.2f %12.2f\n", o.n_prompt, s.median, s.min, s.max);
  }
  if (!tg.empty()) {
    const Stats s = stats(tg);
    std::printf("tg%-8d %12.2f %12.2f %12.2f   (%.1f GB/s)\n", o.n_gen, s.median, s.min, s.max, s.median * gb);
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "measure prefill and decode throughput");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens to prefill (one batch)")->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens to decode one at a time")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "threads; 0 = physical cores")->capture_default_str();
  cmd->add_option("-r,--reps", o->reps, "repetitions (median and range are reported)")->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o, &exit_code] {
    FULGUR_CHECK(o->n_prompt >= 0 && o->n_gen >= 0 && o->n_prompt + o->n_gen > 0, "-p and -n must be >= 0, not both 0");
    FULGUR_CHECK(o->reps >= 1, "-r must be at least 1");
    exit_code = bench(*o);
  });
}

}  // namespace fulgur::cli
