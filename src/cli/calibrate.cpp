// `fulgur calibrate`: measures what the confidence schedule (speculative/scheduler.h) needs of this
// host once, and writes it to the calibration file (speculative/calibration.h) that run, bench and
// serve read: the target's step-time table (seconds of a decode by its rows, at a depth, for
// this thread count and kernel family) and, with a DSpark draft and a calibration text, the
// sequential temperature scaling of the draft's confidence head.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/spec_options.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/dispatch.h"
#include "speculative/calibration.h"
#include "speculative/drafters/dflash.h"
#include "speculative/generator.h"

namespace fulgur::cli {
namespace {

struct CalibrateOptions {
  std::string model, draft, out, text;
  int threads = 0;
  int64_t depth = 256;  // KV positions before the timed rows
  int max_rows = 32;    // the table's last row count
  int reps = 0;         // timings per row count (the median is kept); 0: 9 to 101, about 5 s
  int n_prompts = 32;   // calibration prompts taken from the text
  int prompt_len = 64;  // tokens each
  int n_gen = 64;       // tokens generated from each
  int n_max = 0;        // drafts per step for the fit; 0 = the draft's whole block
  ModelOptions load;
};

// 1..16 rows each (a verification batch of one sequence), then coarser to max_rows.
std::vector<int64_t> table_rows(int max_rows) {
  std::vector<int64_t> rows;
  for (int64_t r : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 32, 48, 64, 96, 128}) {
    if (r <= max_rows) rows.push_back(r);
  }
  return rows;
}

StepTable measure_steps(Context& ctx, const std::vector<int32_t>& ids, const CalibrateOptions& o) {
  Batch batch;
  ctx.clear();
  for (int64_t i = 0; i < o.depth; ++i) batch.add(ids[static_cast<size_t>(i) % ids.size()], static_cast<int32_t>(i), 0, false);
  if (batch.size() > 0) ctx.decode(batch);
  StepTable t;
  t.rows = table_rows(o.max_rows);
  std::vector<std::vector<double>> times(t.rows.size());
  // Round robin over the row counts, starting each round elsewhere, so that a busy moment of
  // the host is spread over all of them instead of landing on a few.
  const double t0 = now_seconds();
  for (int rep = 0;; ++rep) {
    if (o.reps > 0 ? rep >= o.reps : rep >= 101 || (rep >= 9 && now_seconds() - t0 > 5.0)) break;
    for (size_t k = 0; k < t.rows.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(rep) * 5) % t.rows.size();
      times[i].push_back(time_batch(ctx, batch, ids, static_cast<int>(o.depth), static_cast<int>(t.rows[i])));
    }
  }
  for (const std::vector<double>& v : times) t.seconds.push_back(stats(v).median);
  t.make_monotone();
  return t;
}

// The draft's drafter at a fixed length (clamped to its block), checked to have a confidence
// head before anything is measured.
SpecSetup draft_setup(const Model& m, Context& ctx, const CalibrateOptions& o) {
  SpecCliOptions so;
  so.model_draft = o.draft;
  so.n_max = o.n_max > 0 ? o.n_max : 64;  // clamped to the block
  so.schedule = "fixed";
  SpecSetup setup = make_spec_setup(so, m, ctx, o.load);
  const auto* block = dynamic_cast<const DflashDrafter*>(setup.block_drafter);
  FULGUR_CHECK(block != nullptr && block->model().dflash()->confidence, "'", o.draft,
               "' has no confidence head (a DSpark draft with conf_proj): there is nothing to calibrate for it");
  return setup;
}

// Greedy generation with the draft from windows of the text; every verified draft's
// confidences and accepted count.
std::vector<StsSample> collect_samples(Context& ctx, const SpecSetup& setup, const std::vector<int32_t>& text,
                                       const CalibrateOptions& o) {
  const int64_t need = o.prompt_len + o.n_gen;
  GeneratorParams gp;
  gp.sampling.temperature = 0.0f;
  gp.spec.schedule = SpecSchedule::kFixed;
  std::vector<StsSample> samples;
  ctx.clear();
  Generator gen(ctx, gp, setup.drafters);
  gen.on_verify = [&](int, int, const Draft& d, int n_accepted) {
    if (!d.confidence.empty()) samples.push_back({d.confidence, n_accepted});
  };
  // Windows spread evenly over the text, four sequences at a time.
  const int64_t span = static_cast<int64_t>(text.size()) - need;
  constexpr int kParallel = 4;
  for (int p0 = 0; p0 < o.n_prompts; p0 += kParallel) {
    for (int s = 0; s < kParallel && p0 + s < o.n_prompts; ++s) {
      const int64_t at = o.n_prompts > 1 ? span * (p0 + s) / (o.n_prompts - 1) : 0;
      gen.start(s, std::vector<int32_t>(text.begin() + at, text.begin() + at + o.prompt_len), o.n_gen);
    }
    gen.run();
  }
  return samples;
}

int calibrate(const CalibrateOptions& o) {
  FULGUR_CHECK(o.depth >= 0 && o.max_rows >= 1 && o.reps >= 0, "--depth and -r must be >= 0, --max-rows >= 1");
  FULGUR_CHECK(o.draft.empty() || !o.text.empty(), "-md: fitting the draft's confidence temperatures needs a "
               "calibration text (-f FILE)");
  FULGUR_CHECK(o.n_prompts >= 1 && o.prompt_len >= 1 && o.n_gen >= 2, "--prompts, --prompt-len must be >= 1 and -n >= 2");
  const std::string out = o.out.empty() ? calibration_path(o.model) : o.out;
  LoadedModel lm = load_model(o.model, !o.text.empty(), o.load);
  const Model& m = *lm.model;
  std::vector<int32_t> ids;
  if (!o.text.empty()) ids = lm.tokenizer->encode(read_text_file(o.text), false, false);
  if (ids.empty()) {  // the speed of a forward does not depend on the ids
    for (int64_t i = 0; i < o.depth + o.max_rows; ++i) ids.push_back(static_cast<int32_t>((i * 2654435761u + 17) % m.n_vocab()));
  }
  const int64_t n_ctx = std::max<int64_t>(o.depth + o.max_rows + 1, o.prompt_len + o.n_gen + 130) * (o.draft.empty() ? 1 : 4);
  Context ctx(m, {.n_ctx = n_ctx, .n_batch = std::max<int64_t>({512, o.depth, o.max_rows}), .n_threads = o.threads});

  SpecSetup setup;
  if (!o.draft.empty()) {
    setup = draft_setup(m, ctx, o);
    FULGUR_CHECK(static_cast<int64_t>(ids.size()) >= o.prompt_len + o.n_gen, o.text, " has ", ids.size(),
                 " tokens; the calibration needs at least --prompt-len + -n = ", o.prompt_len + o.n_gen);
  }

  Calibration c;
  if (std::filesystem::exists(out)) {
    c = Calibration::read(out);
    const uint64_t size = std::filesystem::file_size(o.model);
    if (c.model_file != std::filesystem::path(o.model).filename().string() || c.model_size != size) {
      log_warn(out, " held the calibration of ", c.model_file, " (", c.model_size, " bytes): replaced");
      c = Calibration{};
    }
  }
  c.model_file = std::filesystem::path(o.model).filename().string();
  c.model_size = std::filesystem::file_size(o.model);

  CalibrationTable table;
  table.threads = ctx.pool().size();
  table.isa = isa_name(kernels::active_isa());
  table.depth = o.depth;
  table.step = measure_steps(ctx, ids, o);
  std::printf("step-time table: %s, %d threads, %s kernels, depth %lld (medians, made non-decreasing)\n",
              o.model.c_str(), table.threads, table.isa.c_str(), static_cast<long long>(o.depth));
  std::printf("%6s %10s %8s\n", "rows", "ms", "x 1 row");
  for (size_t i = 0; i < table.step.rows.size(); ++i) {
    std::printf("%6lld %10.3f %8.2f\n", static_cast<long long>(table.step.rows[i]), 1e3 * table.step.seconds[i],
                table.step.seconds[i] / table.step.seconds[0]);
  }
  c.set(std::move(table));

  if (!o.draft.empty()) {
    const std::vector<StsSample> samples = collect_samples(ctx, setup, ids, o);
    const StsFit fit = fit_temperatures(samples);
    FULGUR_CHECK(!fit.temperatures.empty(), "the calibration run verified only ", samples.size(),
                 " drafts; too few to fit temperatures (use a longer text or more --prompts)");
    DraftCalibration d;
    d.file = o.draft;
    d.size = std::filesystem::file_size(o.draft);
    d.text = std::filesystem::path(o.text).filename().string();
    d.drafts = static_cast<int64_t>(samples.size());
    d.temperatures = fit.temperatures;
    d.ece_before = fit.ece_before;
    d.ece_after = fit.ece_after;
    std::printf("confidence temperatures of %s from %zu verified drafts of %s:\n", o.draft.c_str(), samples.size(),
                o.text.c_str());
    // Also what the replay drafter needs to stand for this one (bench --spec-synth-rates,
    // --spec-synth-confidence): the share of drafts whose first k tokens were all accepted,
    // and the spread of the scaled confidences as a Beta concentration kappa = m (1 - m) / var - 1.
    std::printf("%8s %8s %10s %12s %11s %9s %8s %7s\n", "position", "drafts", "T", "ECE before", "ECE after",
                "accepted", "mean c'", "kappa");
    std::string rates;
    for (size_t k = 0; k < fit.temperatures.size(); ++k) {
      double n = 0, acc = 0, sum = 0, sum2 = 0;
      for (const StsSample& smp : samples) {
        if (smp.confidence.size() <= k) continue;
        const double t = fit.temperatures[k], c = std::clamp<double>(smp.confidence[k], 1e-7, 1.0 - 1e-7);
        const double cs = 1.0 / (1.0 + std::exp(-std::log(c / (1.0 - c)) / t));
        n += 1;
        acc += smp.n_accepted > static_cast<int>(k);
        sum += cs;
        sum2 += cs * cs;
      }
      const double mean = sum / n, var = std::max(sum2 / n - mean * mean, 1e-12);
      std::printf("%8zu %8lld %10.3f %12.4f %11.4f %9.3f %8.3f %7.2f\n", k + 1, static_cast<long long>(fit.samples[k]),
                  fit.temperatures[k], fit.ece_before[k], fit.ece_after[k], acc / n, mean, mean * (1 - mean) / var - 1);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.3f", k ? "," : "", acc / n);
      rates += buf;
    }
    std::printf("per-position acceptance (bench --spec-synth-rates): %s\n", rates.c_str());
    c.set(std::move(d));
  }
  c.write(out);
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "measure this host's step-time table for a model (and a DSpark draft's confidence "
                   "temperatures) for --spec-schedule confidence");
  cmd->add_option("-m,--model", o->model, "target GGUF")->required();
  cmd->add_option("--model-draft", o->draft, "-md: a DSpark draft whose confidence head to calibrate (needs -f)");
  cmd->add_option("-o,--output", o->out, "calibration file; default: beside the model, MODEL.gguf.calibration.json");
  cmd->add_option("-f,--file", o->text, "calibration text (the draft's temperatures are fitted on drafts from it)");
  cmd->add_option("-t,--threads", o->threads, "threads; 0 = physical cores (the table is per thread count)")
      ->capture_default_str();
  cmd->add_option("--depth", o->depth, "KV positions before the timed rows")->capture_default_str();
  cmd->add_option("--max-rows", o->max_rows, "largest batch timed")->capture_default_str();
  cmd->add_option("-r,--reps", o->reps, "timings per row count (the median is kept); 0: at least 9, more for about 5 s")->capture_default_str();
  cmd->add_option("--prompts", o->n_prompts, "calibration prompts taken from the text")->capture_default_str();
  cmd->add_option("--prompt-len", o->prompt_len, "tokens per calibration prompt")->capture_default_str();
  cmd->add_option("-n,--n-predict", o->n_gen, "tokens generated from each prompt")->capture_default_str();
  cmd->add_option("--spec-n-max", o->n_max, "drafts per step in the fit; 0 = the draft's whole block")
      ->capture_default_str();
  add_model_options(cmd, o->load);
  cmd->callback([o, &exit_code] { exit_code = calibrate(*o); });
}

}  // namespace fulgur::cli
