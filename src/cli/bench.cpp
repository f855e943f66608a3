// `fulgur bench`: prefill and decode throughput like llama-bench's pp / tg tests, median and
// spread over repetitions; with --spec-synth-len / --spec-synth-rates, the speculative loop's
// tokens/s at chosen acceptance rates against plain greedy decoding of the same model
// (speculative/drafters/replay.h says exactly what that measures).
#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/session.h"
#include "core/error.h"
#include "core/read_sweep.h"
#include "kernels/dispatch.h"
#include "model/desc.h"
#include "model/layers/layers.h"
#include "speculative/calibration.h"
#include "speculative/drafters/mtp.h"
#include "speculative/drafters/replay.h"
#include "speculative/generator.h"
#include "speculative/target_features.h"

namespace fulgur::cli {
namespace {

struct BenchOptions {
  std::string model;
  int n_prompt = 512, n_gen = 128, threads = 0, reps = 3;
  bool json = false;
  std::string synth_len;    // --spec-synth-len L[,L...]
  std::string synth_rates;  // --spec-synth-rates p1,p2,...
  std::string schedules = "fixed";  // --spec-schedule: one or more, side by side
  double synth_confidence = 0.0;    // --spec-synth-confidence: Beta concentration; 0 = none
  std::string calibration;          // --spec-calibration
  // Drafts per step for --spec-synth-len: 7, so a verify batch (the drafts and the pending
  // token) is 8 rows, one register tile of the packed matmul kernels; a 9th row costs a second
  // pass over every weight tile (4b Q8_0: 8 rows 1.45x one row, 9 rows 1.77x).
  int spec_n_max = 7;
  int verify = 8;           // rows of the timed verification batch; 0 = skip
  bool floor = false;       // --floor: decode against the read speed of its own weights
  ModelOptions load;
};

// Bytes of recurrent state one row of a decode keeps when its state must be restorable: a
// snapshot of every recurrent layer's conv and SSM state (0 for attention-only models).
uint64_t snapshot_bytes_per_row(const ModelDesc& desc) {
  uint64_t floats = 0;
  for (const RecurrentState::LayerSize& l : recurrent_sizes(desc)) floats += static_cast<uint64_t>(l.conv + l.state);
  return floats * sizeof(float);
}

// Seconds of one MTP draft step (the seed row through the MTP block and the output head, its
// token picked), median of `n`, after the prompt's rows were committed to the MTP block, at the
// depth right after the prompt; nothing when the model has no MTP block.
double time_mtp_step(const Model& m, Context& ctx, const std::vector<int32_t>& ids, int n_prompt, int n,
                     const ModelOptions& load) {
  const std::unique_ptr<ChainDrafter> drafter = make_mtp_drafter(
      m, {.n_max = 1,
          .context = {.n_ctx = ctx.n_ctx(), .n_batch = 512, .shared_pool = &ctx.pool()},
          .pack = load.pack});
  ChainDrafter& mtp = *drafter;
  ctx.clear();
  ctx.set_taps(mtp.required_taps());
  Batch batch;
  std::vector<int64_t> rows;
  for (int i = 0; i < n_prompt; ++i) {
    batch.add(ids[i], i, 0, false);
    rows.push_back(i);
  }
  ctx.decode(batch);
  FeatureGather features(ctx, mtp.required_taps());
  mtp.commit(0, std::span(ids.data(), static_cast<size_t>(n_prompt)), 0, features.gather(rows));
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  DraftRequest req;
  req.anchor = ids[n_prompt];
  req.anchor_pos = n_prompt;
  req.n_max = 1;
  req.sampling = &greedy;
  Draft d;
  mtp.catch_up({&req, 1});
  mtp.draft(req, d);  // the committed rows still pending go in with the first seed row
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    d.clear();
    const double t0 = now_seconds();
    mtp.draft(req, d);
    t.push_back(now_seconds() - t0);
  }
  ctx.set_taps({});
  return stats(t).median;
}

// j[key], j[key_min], j[key_max]: a median and its range.
void put_stats(nlohmann::json& j, const std::string& key, const Stats& s) {
  j[key] = s.median;
  j[key + "_min"] = s.min;
  j[key + "_max"] = s.max;
}

// Decoded tokens between two reads of the weights with --floor: short enough that both reads
// see the bandwidth the decode between them saw (on a shared host it changes within seconds),
// long enough that the reads add little (one read costs about one token).
constexpr int kFloorChunk = 16;

int bench(const BenchOptions& o) {
  const double t_load0 = now_seconds();
  LoadedModel lm = load_model(o.model, false, o.load);
  const double load_s = now_seconds() - t_load0;
  const Model& m = *lm.model;
  const ContextParams cp{.n_ctx = o.n_prompt + std::max(o.n_gen, o.verify) + 1,
                         .n_batch = std::max({1, o.n_prompt, o.verify}), .n_threads = o.threads,
                         .n_seq_max = 2};  // the sequence and time_batch's copy of it (sequence 1)
  Context ctx(m, cp);
  // A recurrent model verifies as speculative decoding runs it, keeping the state after each row
  // (ContextParams::n_rollback), on a second context beside the plain one (prefilled once,
  // untimed), on the same pool; the plain context times the same batches keeping no state, and
  // the difference is what the snapshots cost. Plain prefill and decode keep none either.
  const uint64_t snap_bytes = snapshot_bytes_per_row(m.desc());
  std::unique_ptr<Context> snap;
  if (snap_bytes > 0 && o.verify > 0) {
    ContextParams sp = cp;
    sp.shared_pool = &ctx.pool();
    sp.n_rollback = o.verify;
    snap = std::make_unique<Context>(m, sp);
  }
  Context& vctx = snap ? *snap : ctx;  // where verification is timed as speculation runs it
  // Token ids are fixed pseudo-random values: the speed of a forward does not depend on them.
  std::vector<int32_t> ids(o.n_prompt + o.n_gen);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 2654435761u + 17) % m.n_vocab());
  // tok/s; tok/s; seconds of 1 row / o.verify rows as speculation runs them, and keeping no
  // recurrent state (recurrent models only)
  std::vector<double> pp, tg, one, many, one_plain, many_plain;
  // --floor: per chunk of decoded tokens, the read speed of the weights around it (GB/s) and the
  // chunk's decode speed over the floor that speed gives (file bytes per token, as `gb` below).
  std::vector<double> floor_read, floor_share;
  const std::vector<std::span<const uint8_t>> weights = o.floor ? m.token_weight_ranges() : decltype(weights){};
  double weights_gb = 0;
  for (std::span<const uint8_t> r : weights) weights_gb += static_cast<double>(r.size()) / 1e9;
  const double gb = static_cast<double>(m.bytes_per_token()) / 1e9;
  // f16 K and V of every layer that keeps them: GB a decoded token reads per cell it attends
  // to. The floor of a token at depth p counts (p + 1) cells of it beside the weights, at most
  // the window on sliding-window layers.
  const auto kv_gb_per_cell = [&](int32_t window) {
    const std::vector<int64_t> heads = m.desc().kv_heads(window), dims = m.desc().kv_head_dims(window);
    double elems = 0;
    for (size_t l = 0; l < heads.size(); ++l) elems += static_cast<double>(heads[l] * dims[l]);
    return 2.0 * 2.0 * elems / 1e9;
  };
  const double depth_mean = o.n_prompt + (o.n_gen + 1) / 2.0;  // over the decoded tokens
  const int32_t window = m.desc().max_window();
  const double kv_gb_full = kv_gb_per_cell(0), kv_gb_window = window > 0 ? kv_gb_per_cell(window) : 0.0;
  const double kv_gb_mean = kv_gb_full * depth_mean + kv_gb_window * std::min<double>(depth_mean, window);
  if (o.floor) read_seconds(weights, ctx.pool());  // faults in what is mapped, untimed
  double verify_experts = 0;  // MoE: experts run per layer by the last verification batch
  Batch batch;
  const auto prefill = [&](Context& c) {
    batch.clear();
    for (int i = 0; i < o.n_prompt; ++i) batch.add(ids[i], i, 0, i + 1 == o.n_prompt);
    c.decode(batch);
  };
  if (snap && o.n_prompt > 0) prefill(*snap);
  for (int rep = 0; rep < o.reps; ++rep) {
    ctx.clear();
    if (o.n_prompt > 0) {
      const double t0 = now_seconds();
      prefill(ctx);
      pp.push_back(o.n_prompt / (now_seconds() - t0));
    }
    if (o.verify > 0) {
      // Alternate one row and a verification batch at the same depth (right after the prompt),
      // so both see the same machine state; the ratio of the medians is the cost of verifying.
      for (int k = 0; k < 8; ++k) {
        one.push_back(time_batch(vctx, batch, ids, o.n_prompt, 1));
        many.push_back(time_batch(vctx, batch, ids, o.n_prompt, o.verify));
        verify_experts = vctx.experts_per_moe_layer();
        if (!snap) continue;
        one_plain.push_back(time_batch(ctx, batch, ids, o.n_prompt, 1));
        many_plain.push_back(time_batch(ctx, batch, ids, o.n_prompt, o.verify));
      }
    }
    if (o.n_gen > 0) {
      // With --floor, the weights are read between chunks of tokens (not timed as decode); each
      // chunk's speed is set against the mean read speed of the reads before and after it.
      const int chunk = o.floor ? kFloorChunk : o.n_gen;
      double decode_s = 0, read_before = o.floor ? read_seconds(weights, ctx.pool()) : 0;
      for (int i0 = 0; i0 < o.n_gen; i0 += chunk) {
        const int n = std::min(chunk, o.n_gen - i0);
        const double t0 = now_seconds();
        for (int i = i0; i < i0 + n; ++i) {
          batch.clear();
          batch.add(ids[o.n_prompt + i], o.n_prompt + i, 0, true);
          ctx.decode(batch);
        }
        const double t = now_seconds() - t0;
        decode_s += t;
        if (!o.floor) continue;
        const double read_after = read_seconds(weights, ctx.pool());
        const double read_gb_s = weights_gb / (0.5 * (read_before + read_after));
        // Cells the chunk's tokens attend to: token at position p sees p + 1 of them.
        const double cells = n * (o.n_prompt + i0 + 1.0) + n * (n - 1) / 2.0;
        floor_read.push_back(read_gb_s);
        const double window_cells = n * std::min<double>(o.n_prompt + i0 + 1.0, window);
        floor_share.push_back((n * gb + cells * kv_gb_full + window_cells * kv_gb_window) / read_gb_s / t);
        read_before = read_after;
      }
      tg.push_back(o.n_gen / decode_s);
    }
  }
  // A model with an MTP block: what one draft step of draft-mtp costs against one target row.
  const double mtp_s = m.desc().n_nextn > 0 && o.n_prompt > 0 && o.n_gen > 0
                           ? time_mtp_step(m, ctx, ids, o.n_prompt, 16, o.load)
                           : 0.0;
  nlohmann::json j;
  j["model"] = o.model;
  j["threads"] = ctx.pool().size();
  j["isa"] = isa_name(kernels::active_isa());
  j["reps"] = o.reps;
  j["weights_gb_per_token"] = gb;
  // K and V the context holds for its -c cells (a sliding-window layer's only for its window).
  j["n_ctx"] = ctx.n_ctx();
  j["kv_mib"] = static_cast<double>(ctx.kv_bytes()) / (1 << 20);
  if (!pp.empty()) {
    const Stats s = stats(pp);
    j["n_prompt"] = o.n_prompt;
    put_stats(j, "prefill_tok_s", s);
  }
  if (!tg.empty()) {
    const Stats s = stats(tg);
    j["n_gen"] = o.n_gen;
    put_stats(j, "decode_tok_s", s);
    j["decode_gb_s"] = s.median * gb;
  }
  if (!floor_share.empty()) {
    put_stats(j, "floor_read_gb_s", stats(floor_read));
    put_stats(j, "decode_share_of_floor", stats(floor_share));
    j["floor_kv_gb_per_token"] = kv_gb_mean;
    j["floor_chunks"] = floor_share.size();
  }
  j["load_s"] = load_s;
  j["tiles_from_cache"] = m.tiles_from_cache();
  j["pack_s"] = m.pack_seconds();
  if (!one.empty()) {
    const double t1 = stats(one).median, tv = stats(many).median;
    j["verify_rows"] = o.verify;
    j["one_row_ms"] = 1e3 * t1;
    j["verify_ms"] = 1e3 * tv;
    j["verify_ratio"] = tv / t1;
    // MoE: the experts the last verification batch ran per layer (one row runs k of them).
    if (vctx.experts_per_moe_layer() > 0) j["verify_experts_per_layer"] = verify_experts;
  }
  if (!one_plain.empty()) {
    // The same batches keeping no recurrent state, and the snapshots' share of the batch.
    const double tv = stats(many).median, tp1 = stats(one_plain).median, tpv = stats(many_plain).median;
    j["snapshot_mb_per_row"] = static_cast<double>(snap_bytes) / 1e6;
    j["one_row_no_snapshot_ms"] = 1e3 * tp1;
    j["verify_no_snapshot_ms"] = 1e3 * tpv;
    j["verify_no_snapshot_ratio"] = tpv / tp1;
    j["verify_snapshot_share"] = (tv - tpv) / tv;
  }
  if (mtp_s > 0) {
    j["mtp_step_ms"] = 1e3 * mtp_s;
    if (!one.empty()) j["mtp_step_ratio"] = mtp_s / stats(one).median;
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
  if (!floor_share.empty()) {
    const Stats r = stats(floor_read), f = stats(floor_share);
    std::printf("floor: decode at %.0f %% (%.0f..%.0f) of the floor set by reading its own weights (%.3f GB held) "
                "and the KV cells each token attends to (%.1f MB per token at depth %d), "
                "between chunks of %d tokens, %zu chunks, medians; those reads ran at %.1f GB/s (%.1f..%.1f)\n",
                100 * f.median, 100 * f.min, 100 * f.max, weights_gb, 1e3 * kv_gb_mean, o.n_prompt, kFloorChunk,
                floor_share.size(), r.median, r.min, r.max);
  }
  if (!one.empty()) {
    std::printf("verify: %d rows in %.2f ms, one row in %.2f ms: %.2fx (at depth %d, medians)\n", o.verify,
                j["verify_ms"].get<double>(), j["one_row_ms"].get<double>(), j["verify_ratio"].get<double>(),
                o.n_prompt);
    if (j.contains("verify_experts_per_layer"))
      std::printf("verify: %.1f distinct experts per MoE layer ran\n", verify_experts);
  }
  if (mtp_s > 0) {
    std::printf("mtp: one draft step (MTP block + output head) in %.2f ms", 1e3 * mtp_s);
    if (j.contains("mtp_step_ratio")) std::printf(", %.2fx one target row", j["mtp_step_ratio"].get<double>());
    std::printf(" (at depth %d, median)\n", o.n_prompt);
  }
  if (!one_plain.empty()) {
    std::printf("verify keeping no recurrent state: %d rows in %.2f ms, one row in %.2f ms: %.2fx; the "
                "snapshots (%.2f MB per row) are %.1f%% of the batch above\n",
                o.verify, j["verify_no_snapshot_ms"].get<double>(), j["one_row_no_snapshot_ms"].get<double>(),
                j["verify_no_snapshot_ratio"].get<double>(), j["snapshot_mb_per_row"].get<double>(),
                100.0 * j["verify_snapshot_share"].get<double>());
  }
  if (m.tiles_from_cache()) {
    std::printf("load: %.2f s (packed tiles mapped from the tile cache)\n", load_s);
  } else {
    std::printf("load: %.2f s (of which repacking %.2f s)\n", load_s, m.pack_seconds());
  }
  return 0;
}

std::vector<double> parse_lengths(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FULGUR_CHECK(used > 0 && used == item.size(), "--spec-synth-len: '", item, "' is not a number");
    out.push_back(v);
  }
  FULGUR_CHECK(!out.empty(), "--spec-synth-len: empty list");
  return out;
}

// One timed greedy generation; returns tokens/s of the decode phase (prefill excluded).
double timed_generation(Context& ctx, std::vector<Drafter*> drafters, const std::vector<int32_t>& prompt,
                        int n_gen, const SpecParams& spec, GenerationStats* stats, std::vector<int32_t>* out) {
  GeneratorParams gp;
  gp.sampling.temperature = 0.0f;
  gp.spec = spec;
  Generator gen(ctx, gp, std::move(drafters));
  gen.start(0, prompt, n_gen);
  const double t0 = now_seconds();
  gen.run();
  const double t = now_seconds() - t0 - gen.stats().t_prefill;
  if (stats) *stats = gen.stats();
  if (out) *out = gen.output(0);
  return static_cast<double>(gen.output(0).size()) / t;
}

// "fixed,adaptive" -> the schedules, in order; throws naming a bad or repeated one.
std::vector<SpecSchedule> parse_schedules(const std::string& list) {
  std::vector<SpecSchedule> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const SpecSchedule s = parse_spec_schedule(item);
    FULGUR_CHECK(std::find(out.begin(), out.end(), s) == out.end(), "--spec-schedule '", list, "': ", item,
                 " is listed twice");
    out.push_back(s);
  }
  FULGUR_CHECK(!out.empty(), "--spec-schedule: empty list");
  return out;
}

int spec_bench(const BenchOptions& o) {
  // Every rate set is checked before the model is loaded.
  std::vector<std::pair<std::string, std::vector<float>>> rate_sets;  // label, rates
  if (!o.synth_rates.empty()) rate_sets.emplace_back("rates " + o.synth_rates, parse_synth_rates(o.synth_rates));
  if (!o.synth_len.empty()) {
    for (double len : parse_lengths(o.synth_len)) {
      char label[64];
      std::snprintf(label, sizeof label, "L=%g", len);
      rate_sets.emplace_back(label, synth_rates_for_length(len, o.spec_n_max));
    }
  }
  const std::vector<SpecSchedule> schedules = parse_schedules(o.schedules);
  FULGUR_CHECK(o.n_prompt >= 1 && o.n_gen >= 2, "spec bench: needs -p >= 1 and -n >= 2");
  FULGUR_CHECK(o.synth_confidence >= 0.0, "--spec-synth-confidence ", o.synth_confidence, " must be >= 0");
  LoadedModel lm = load_model(o.model, false, o.load);
  const Model& m = *lm.model;
  size_t longest = 0;
  for (const auto& c : rate_sets) longest = std::max(longest, c.second.size());
  Context ctx(m, {.n_ctx = o.n_prompt + o.n_gen + static_cast<int64_t>(longest) + 2,
                  .n_batch = std::max(64, o.n_prompt), .n_threads = o.threads});
  // Speculation runs on a context of its own, on the same pool: a recurrent model reserves its
  // rollback (the state after each row of a verification batch) before its first decode, and
  // plain decoding keeps no such states.
  Context spec_ctx(m, {.n_ctx = ctx.n_ctx(), .n_batch = ctx.n_batch(), .shared_pool = &ctx.pool(),
                       .n_rollback = static_cast<int>(longest) + 1});
  // The step-time table of `fulgur calibrate` when there is one for this thread count.
  StepTable table;
  const std::string calib = o.calibration.empty() ? calibration_path(o.model) : o.calibration;
  if (std::filesystem::exists(calib)) {
    const Calibration c = Calibration::read(calib);
    if (const CalibrationTable* t = c.table(ctx.pool().size(), isa_name(kernels::active_isa()))) table = t->step;
  }
  std::vector<int32_t> prompt(static_cast<size_t>(o.n_prompt));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 2654435761u + 17) % m.n_vocab());

  struct Result {
    std::string label;
    SpecSchedule schedule = SpecSchedule::kFixed;
    size_t rates = 0;  // index into rate_sets
    std::vector<double> tps;
    GenerationStats last;
  };
  Result plain;
  std::vector<Result> spec;
  for (size_t c = 0; c < rate_sets.size(); ++c) {
    for (SpecSchedule sch : schedules) {
      Result r;
      r.label = schedules.size() > 1 ? rate_sets[c].first + ", " + spec_schedule_name(sch) : rate_sets[c].first;
      r.schedule = sch;
      r.rates = c;
      spec.push_back(std::move(r));
    }
  }
  // Every case once per repetition, side by side, so that they share the host's moods.
  for (int rep = 0; rep < o.reps; ++rep) {
    std::vector<int32_t> reference;
    plain.tps.push_back(timed_generation(ctx, {}, prompt, o.n_gen, {}, &plain.last, &reference));
    for (size_t c = 0; c < spec.size(); ++c) {
      Result& r = spec[c];
      ReplayDrafter synth(rate_sets[r.rates].second, static_cast<int>(m.n_vocab()), 1000u * rep + r.rates + 1,
                         o.synth_confidence);
      synth.set_reference(0, reference, o.n_prompt);
      const SpecParams sp{.schedule = r.schedule, .step_table = table};
      std::vector<int32_t> out;
      r.tps.push_back(timed_generation(spec_ctx, {&synth}, prompt, o.n_gen, sp, &r.last, &out));
      FULGUR_CHECK(out == reference, "spec bench: speculative greedy output differs from plain greedy output "
                   "(", r.label, ", repetition ", rep, "): the verify path is not lossless");
    }
  }
  const Stats ps = stats(plain.tps);
  nlohmann::json j;
  j["model"] = o.model;
  j["threads"] = ctx.pool().size();
  j["n_prompt"] = o.n_prompt;
  j["n_gen"] = o.n_gen;
  j["reps"] = o.reps;
  j["plain_tok_s"] = ps.median;
  j["step_table"] = !table.empty();
  j["synth_confidence"] = o.synth_confidence;
  j["spec"] = nlohmann::json::array();
  if (!o.json) {
    std::printf("model %s | %d threads | %s kernels | prompt %d, %d tokens greedy | %d reps | step costs %s\n",
                o.model.c_str(), ctx.pool().size(), isa_name(kernels::active_isa()), o.n_prompt, o.n_gen, o.reps,
                table.empty() ? "measured on the fly" : "from the calibration table");
    std::printf("%-34s %10s %10s %8s %9s %9s %8s\n", "case", "tok/s", "plain", "speedup", "mean len",
                "accept", "k");
  }
  for (const Result& r : spec) {
    const Stats s = stats(r.tps);
    const DrafterStats d = r.last.total();
    // Per repetition: this case's tokens/s over plain decoding's measured beside it.
    std::vector<double> ratios;
    for (size_t i = 0; i < r.tps.size(); ++i) ratios.push_back(r.tps[i] / plain.tps[i]);
    nlohmann::json e;
    e["case"] = r.label;
    e["schedule"] = spec_schedule_name(r.schedule);
    e["rates"] = rate_sets[r.rates].second;
    e["tok_s"] = s.median;
    e["tok_s_min"] = s.min;
    e["tok_s_max"] = s.max;
    e["tok_s_all"] = r.tps;
    e["speedup"] = stats(ratios).median;
    e["mean_accepted_length"] = d.mean_accepted_length();
    e["acceptance_rate"] = d.acceptance_rate();
    e["per_position"] = d.acceptance_per_position();
    e["target_decodes"] = r.last.decodes;
    // Where a speculative step's time goes (the last repetition): target verify decodes,
    // drafting, and KV rollback + drafter commits.
    e["verify_s"] = r.last.t_verify;
    e["draft_s"] = r.last.t_draft;
    e["commit_s"] = r.last.t_commit;
    j["spec"].push_back(e);
    if (!o.json) {
      std::printf("%-34s %10.2f %10.2f %7.2fx %9.2f %9.3f %8zu\n", r.label.c_str(), s.median, ps.median,
                  stats(ratios).median, d.mean_accepted_length(), d.acceptance_rate(),
                  rate_sets[r.rates].second.size());
    }
  }
  j["plain_tok_s_all"] = plain.tps;
  if (o.json) std::printf("%s\n", j.dump().c_str());
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
  add_model_options(cmd, o->load);
  cmd->add_option("--verify", o->verify,
                  "also time one decode of this many rows (a verification batch) against one row, and on "
                  "recurrent models the same keeping each row's state (as speculation does); 0 = skip")
      ->capture_default_str();
  cmd->add_flag("--floor", o->floor,
               "also read the weights a decoded token reads, as they are held, between chunks of 16 decoded "
               "tokens (not timed as decode), and report each chunk's speed as a share of the floor set by "
               "the read speed around it: on a shared host the bandwidth changes within seconds (the floor "
               "counts the weights and the f16 KV cells each token attends to, at the speed the weights "
               "were read)");
  cmd->add_option("--spec-synth-len", o->synth_len,
                  "speculative loop at mean accepted length L (comma-separated list) vs plain greedy");
  cmd->add_option("--spec-synth-rates", o->synth_rates,
                  "speculative loop at these per-position acceptance rates vs plain greedy");
  cmd->add_option("--spec-n-max", o->spec_n_max, "drafts per step for --spec-synth-len")->capture_default_str();
  cmd->add_option("--spec-schedule", o->schedules,
                  "with --spec-synth-*: fixed (drafts of exactly the rates' length), adaptive, confidence, "
                  "or several (comma-separated), run side by side")
      ->capture_default_str();
  cmd->add_option("--spec-synth-confidence", o->synth_confidence,
                  "the replay drafter reports calibrated confidences drawn from Beta(k r, k (1 - r)) for "
                  "conditional rate r (smaller k: more informative); 0 = none")
      ->capture_default_str();
  cmd->add_option("--spec-calibration", o->calibration,
                  "calibration file (step-time table); default: MODEL.gguf.calibration.json beside the model when it exists");
  cmd->callback([o, &exit_code] {
    FULGUR_CHECK(o->reps >= 1, "-r must be at least 1");
    if (!o->synth_len.empty() || !o->synth_rates.empty()) {
      exit_code = spec_bench(*o);
      return;
    }
    FULGUR_CHECK(o->n_prompt >= 0 && o->n_gen >= 0 && o->n_prompt + o->n_gen > 0, "-p and -n must be >= 0, not both 0");
    FULGUR_CHECK(o->verify >= 0, "--verify must be >= 0");
    FULGUR_CHECK(o->reps >= 1, "-r must be at least 1");
    exit_code = bench(*o);
  });
}

}  // namespace fulgur::cli
