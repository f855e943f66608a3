#include "cli/spec_options.h"

#include <algorithm>
#include <filesystem>

#include "cli/session.h"
#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf_reader.h"
#include "kernels/dispatch.h"
#include "model/archs/dflash.h"
#include "speculative/drafters/dflash.h"
#include "speculative/calibration.h"
#include "speculative/drafters/draft_model.h"
#include "speculative/drafters/eagle3.h"
#include "speculative/drafters/gemma4_assistant.h"
#include "speculative/drafters/mtp.h"
#include "speculative/spec_types.h"

namespace fulgur::cli {

void add_spec_options(CLI::App* cmd, SpecCliOptions& o) {
  cmd->add_option("--spec,--spec-type", o.types,
                  "speculative methods, comma-separated, with llama.cpp's names: draft-simple "
                  "(= draft-model), draft-dflash / draft-dspark (= dflash, dspark, dflash2: the kind "
                  "is read from the draft), ngram-simple (= ngram), ngram-map-k, ngram-map-k4v, ngram-mod, "
                  "ngram-cache (llama.cpp's algorithms), none (overrides the list); -md alone picks "
                  "draft-simple, draft-dflash, draft-eagle3 or draft-mtp from the file; draft-mtp (= mtp) "
                  "drafts with the target's own MTP block, or with -md a Gemma 4 assistant (gemma4-assistant)");
  cmd->add_option("--spec-order", o.order,
                  "llama: n-gram methods are tried before model drafters, as llama.cpp does; "
                  "listed: in the order --spec lists them")
      ->capture_default_str();
  cmd->add_option("--model-draft,--spec-draft-model", o.model_draft,
                  "-md: draft GGUF: a small LM with the target's vocabulary, a dflash block draft, an "
                  "eagle3 draft or a gemma4-assistant");
  cmd->add_option("--spec-n-max,--spec-draft-n-max", o.n_max,
                  "most tokens drafted per step (a block draft clamps it to its block)")->capture_default_str();
  cmd->add_option("--spec-n-min,--spec-draft-n-min", o.n_min,
                  "drafts shorter than this are discarded")->capture_default_str();
  cmd->add_option("--spec-p-min,--spec-draft-p-min", o.p_min,
                  "stop drafting before a token whose draft probability (DSpark: confidence) is below this")->capture_default_str();
  cmd->add_option("--spec-schedule", o.schedule,
                  "confidence: draft lengths chosen from measured costs and acceptance, and each draft "
                  "with confidences (DSpark) cut to the prefix worth verifying; adaptive: the lengths "
                  "only; fixed: always draft and verify up to --spec-n-max (llama.cpp)")
      ->capture_default_str();
  cmd->add_flag("--spec-fixed-n", o.fixed_n, "= --spec-schedule fixed");
  cmd->add_option("--spec-calibration", o.calibration,
                  "calibration file of `fulgur calibrate` (step-time table, confidence temperatures); "
                  "default: MODEL.gguf.calibration.json beside the model when it exists, else costs are "
                  "measured on the fly");
  cmd->add_option("--spec-dflash-block", o.dflash_block,
                  "rows of a DFlash/DSpark block run per draft: trained (the trained block size, "
                  "whatever --spec-n-max) or n-max (llama.cpp: just the rows --spec-n-max needs); "
                  "the block attends both ways, so the drafts differ")
      ->check(CLI::IsMember({"trained", "n-max"}))
      ->capture_default_str();
  cmd->add_option("--threads-draft", o.threads_draft, "-td: draft model threads; 0 = like the target")
      ->capture_default_str();
  cmd->add_option("--spec-ngram-size-n", o.ngram.size_n, "ngram: longest key (tokens)")->capture_default_str();
  cmd->add_option("--spec-ngram-min-n", o.ngram.min_n, "ngram: shortest key tried")->capture_default_str();
  cmd->add_option("--spec-ngram-size-m", o.ngram.size_m, "ngram: most tokens proposed")->capture_default_str();
  const auto add_map = [&](const std::string& name, NgramMapParams& p) {
    cmd->add_option("--spec-" + name + "-size-n", p.size_n, name + ": key n-gram (tokens)")->capture_default_str();
    cmd->add_option("--spec-" + name + "-size-m", p.size_m, name + ": drafted m-gram (tokens)")->capture_default_str();
    cmd->add_option("--spec-" + name + "-min-hits", p.min_hits,
                    name + ": hits of a key before it drafts" +
                        (name == "ngram-map-k" ? " (llama.cpp accepts it; its ngram-map-k does not use it)" : ""))
        ->capture_default_str();
  };
  add_map("ngram-map-k", o.ngram_map_k);
  add_map("ngram-map-k4v", o.ngram_map_k4v);
  cmd->add_option("--spec-ngram-mod-n-match", o.ngram_mod.n_match, "ngram-mod: n-gram size hashed")
      ->capture_default_str();
  cmd->add_option("--spec-ngram-mod-n-min", o.ngram_mod.n_min, "ngram-mod: shorter drafts are dropped")
      ->capture_default_str();
  cmd->add_option("--spec-ngram-mod-n-max", o.ngram_mod.n_max, "ngram-mod: most tokens drafted")
      ->capture_default_str();
  cmd->add_option("--lookup-cache-static", o.ngram_cache.static_path,
                  "-lcs: ngram-cache: llama.cpp's static lookup cache file (read only)");
  cmd->add_option("--lookup-cache-dynamic", o.ngram_cache.dynamic_path,
                  "-lcd: ngram-cache: llama.cpp's dynamic lookup cache file (read; not written back, as "
                  "llama.cpp's speculative driver)");
  cmd->add_flag("--spec-default", o.spec_default,
                "llama.cpp's default speculative config: adds ngram-mod to --spec (its preset n-match 24, "
                "n-min 48, n-max 64 are the defaults above; --spec-ngram-mod-* given explicitly win)");
}

void rewrite_multi_letter_options(int argc, char** argv) {
  static char kModelDraft[] = "--model-draft";
  static char kThreadsDraft[] = "--threads-draft";
  static char kParallel[] = "--parallel";  // serve's slots, llama-server's -np
  static char kLookupStatic[] = "--lookup-cache-static";
  static char kLookupDynamic[] = "--lookup-cache-dynamic";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;  // everything after is positional
    if (a == "-md") argv[i] = kModelDraft;
    if (a == "-td") argv[i] = kThreadsDraft;
    if (a == "-np") argv[i] = kParallel;
    if (a == "-lcs") argv[i] = kLookupStatic;
    if (a == "-lcd") argv[i] = kLookupDynamic;
  }
}

namespace {

// draft-dflash and draft-dspark name one drafter that reads its kind from the file; when the
// name given says another kind than the file holds, say what the file is (llama.cpp's names
// suggest they differ).
void say_block_kind(const SpecCliOptions& o, DflashKind kind) {
  std::vector<std::string> names;
  for (size_t b = 0, e; b <= o.types.size(); b = e + 1) {
    e = std::min(o.types.find(',', b), o.types.size());
    names.push_back(o.types.substr(b, e - b));
  }
  const auto named = [&](std::initializer_list<const char*> any) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return std::find(any.begin(), any.end(), n) != any.end(); });
  };
  const bool says_dspark = named({"draft-dspark", "dspark"});
  const bool says_dflash = named({"draft-dflash", "dflash"});
  if ((says_dspark && kind != DflashKind::kDspark) || (says_dflash && !says_dspark && kind == DflashKind::kDspark)) {
    log_info("-md '", o.model_draft, "' is a ", dflash_kind_name(kind), " draft",
             kind == DflashKind::kDspark ? " (a Markov head)" : " (no Markov head)", "; --spec '", o.types,
             "' runs it as one (draft-dflash and draft-dspark read the kind from the file)");
  }
}

SpecTypes effective_types(const SpecCliOptions& o) {
  std::string list = o.types;
  if (o.spec_default && ("," + list + ",").find(",ngram-mod,") == std::string::npos) {
    list += list.empty() ? "ngram-mod" : ",ngram-mod";
  }
  SpecTypes t = parse_spec_types(list, parse_spec_order(o.order));
  if (t.types.empty() && !t.none && !o.model_draft.empty()) {
    // -md alone: the draft file says which kind it is.
    const std::string arch = GgufReader(o.model_draft).get_string("general.architecture", "");
    t.types.push_back(arch == "dflash"             ? SpecType::kDflash
                      : arch == "eagle3"           ? SpecType::kEagle3
                      : arch == "gemma4-assistant" ? SpecType::kMtp
                                                   : SpecType::kDraftModel);
  }
  return t;
}

}  // namespace

void check_spec_options(const SpecCliOptions& o) {
  const SpecTypes parsed = effective_types(o);
  const std::vector<SpecType>& types = parsed.types;
  FULGUR_CHECK(o.n_max >= 1, "--spec-n-max ", o.n_max, " must be >= 1");
  FULGUR_CHECK(o.n_min >= 0, "--spec-n-min ", o.n_min, " must be >= 0");
  FULGUR_CHECK(o.p_min >= 0.0f && o.p_min <= 1.0f, "--spec-p-min ", o.p_min, " must be in [0, 1]");
  auto wants = [&](SpecType t) { return std::find(types.begin(), types.end(), t) != types.end(); };
  const bool wants_model = wants(SpecType::kDraftModel), wants_block = wants(SpecType::kDflash),
             wants_eagle3 = wants(SpecType::kEagle3);
  // draft-mtp reads -md when one is given (a Gemma 4 assistant), else the target's own block.
  const bool wants_assistant = wants(SpecType::kMtp) && !o.model_draft.empty();
  FULGUR_CHECK(wants_model + wants_block + wants_eagle3 + wants_assistant <= 1, "--spec '", o.types,
               "': draft-simple, draft-dflash, draft-eagle3 and draft-mtp with -md would all read -md; pick one");
  FULGUR_CHECK(!wants_model || !o.model_draft.empty(), "--spec draft-simple needs a draft model (-md FILE)");
  FULGUR_CHECK(!wants_block || !o.model_draft.empty(), "--spec draft-dflash needs a DFlash/DSpark draft (-md FILE)");
  FULGUR_CHECK(!wants_eagle3 || !o.model_draft.empty(), "--spec draft-eagle3 needs an EAGLE-3 draft (-md FILE)");
  FULGUR_CHECK(o.model_draft.empty() || parsed.none || wants_model || wants_block || wants_eagle3 || wants_assistant,
               "-md '", o.model_draft, "' is given but --spec '", o.types,
               "' lists none of draft-simple, draft-dflash, draft-eagle3, draft-mtp");
  if (wants(SpecType::kNgram)) {
    NgramDrafter check(o.ngram);  // validates the sizes
  }
  if (wants(SpecType::kNgramMapK)) NgramMapDrafter::check(o.ngram_map_k, "--spec-ngram-map-k");
  if (wants(SpecType::kNgramMapK4v)) NgramMapDrafter::check(o.ngram_map_k4v, "--spec-ngram-map-k4v");
  if (wants(SpecType::kNgramMod)) NgramModDrafter::check(o.ngram_mod);
  for (const auto& [path, option] : {std::pair{o.ngram_cache.static_path, "--lookup-cache-static"},
                                     std::pair{o.ngram_cache.dynamic_path, "--lookup-cache-dynamic"}}) {
    FULGUR_CHECK(path.empty() || wants(SpecType::kNgramCache), option, " '", path, "' is given but --spec '",
                 o.types, "' does not list ngram-cache");
    FULGUR_CHECK(path.empty() || std::filesystem::exists(path), option, " '", path, "': no such file");
  }
  spec_schedule(o);
  FULGUR_CHECK(o.calibration.empty() || std::filesystem::exists(o.calibration), "--spec-calibration '",
               o.calibration, "': no such file");
}

SpecSchedule spec_schedule(const SpecCliOptions& o) {
  const SpecSchedule s = parse_spec_schedule(o.schedule);
  FULGUR_CHECK(!o.fixed_n || s == SpecSchedule::kFixed || o.schedule == "confidence", "--spec-fixed-n and "
               "--spec-schedule ", o.schedule, " disagree");
  return o.fixed_n ? SpecSchedule::kFixed : s;
}

SpecSetup make_spec_setup(const SpecCliOptions& o, const Model& target, Context& target_ctx,
                          const ModelOptions& load) {
  check_spec_options(o);
  const SpecTypes parsed = effective_types(o);
  for (const std::string& note : parsed.notes) log_info(note);
  if (parsed.none && !o.model_draft.empty()) {
    log_warn("-md '", o.model_draft, "' is not used: --spec '", o.types, "' includes none");
  }
  SpecSetup setup;
  // Drafters run between the target's decodes, never beside them: with the same thread count
  // they share its pool (two pools would keep two sets of threads spinning on the same cores).
  ThreadPool* shared = o.threads_draft == 0 || o.threads_draft == target_ctx.pool().size()
                           ? &target_ctx.pool()
                           : nullptr;
  for (SpecType t : parsed.types) {
    switch (t) {
      case SpecType::kDraftModel: {
        const double t0 = now_seconds();
        setup.draft_model = std::make_unique<Model>(o.model_draft, load);
        DraftModelParams p;
        p.n_max = o.n_max;
        // The draft mirrors the target's sequences, so it needs the same number of cells (and
        // of recurrent state slots, when it has recurrent layers).
        p.context = {.n_ctx = target_ctx.n_ctx(), .n_batch = 512, .n_threads = o.threads_draft,
                     .shared_pool = shared, .n_seq_max = target_ctx.n_seq_max()};
        setup.owned.push_back(std::make_unique<DraftModelDrafter>(target, *setup.draft_model, p));
        setup.load_seconds += now_seconds() - t0;
        break;
      }
      case SpecType::kNgram:
        setup.owned.push_back(std::make_unique<NgramDrafter>(o.ngram));
        break;
      case SpecType::kNgramMapK:
        setup.owned.push_back(std::make_unique<NgramMapDrafter>(o.ngram_map_k, true));
        break;
      case SpecType::kNgramMapK4v:
        setup.owned.push_back(std::make_unique<NgramMapDrafter>(o.ngram_map_k4v, false));
        break;
      case SpecType::kNgramMod:
        // One pool for every sequence (in `serve`, every slot), as llama-server shares it.
        setup.owned.push_back(std::make_unique<NgramModDrafter>(o.ngram_mod));
        break;
      case SpecType::kNgramCache:
        setup.owned.push_back(std::make_unique<NgramCacheDrafter>(o.ngram_cache));
        break;
      case SpecType::kMtp:
      case SpecType::kEagle3: {
        const double t0 = now_seconds();
        ChainParams p;
        p.n_max = o.n_max;
        // One draft row per target position: the same number of cells (and sequences) as the target.
        p.context = {.n_ctx = target_ctx.n_ctx(), .n_batch = 512, .n_threads = o.threads_draft,
                     .shared_pool = shared, .n_seq_max = target_ctx.n_seq_max()};
        p.pack = load.pack;
        if (t == SpecType::kMtp && !o.model_draft.empty()) {
          setup.owned.push_back(make_gemma4_assistant_drafter(target, target_ctx, o.model_draft, p));
        } else if (t == SpecType::kMtp) {
          setup.owned.push_back(make_mtp_drafter(target, p));
        } else {
          setup.owned.push_back(make_eagle3_drafter(target, o.model_draft, p));
        }
        setup.load_seconds += now_seconds() - t0;
        break;
      }
      case SpecType::kDflash: {
        const double t0 = now_seconds();
        auto drafter = std::make_unique<DflashDrafter>(
            o.model_draft, target,
            DflashOptions{.n_ctx = target_ctx.n_ctx(), .n_threads = o.threads_draft,
                          .shared_pool = shared, .n_max = o.n_max,
                          .short_block = o.dflash_block == "n-max"});
        check_dflash_p_min(*drafter->model().dflash(), o.p_min, cat("DSpark draft '", o.model_draft, "'"));
        say_block_kind(o, drafter->model().dflash()->kind);
        setup.block_drafter = drafter.get();
        setup.owned.push_back(std::move(drafter));
        setup.load_seconds += now_seconds() - t0;
        break;
      }
    }
    setup.drafters.push_back(setup.owned.back().get());
  }
  return setup;
}

SpecParams spec_params(const SpecCliOptions& o, const std::string& model_path, Context& target_ctx,
                       const SpecSetup& setup) {
  SpecParams p{.n_min = o.n_min, .p_min = o.p_min, .schedule = spec_schedule(o)};
  const std::string path = o.calibration.empty() ? calibration_path(model_path) : o.calibration;
  if (setup.drafters.empty() || p.schedule == SpecSchedule::kFixed) return p;
  if (!std::filesystem::exists(path)) {
    log_info("no calibration file ", path, " (fulgur calibrate writes one): step costs are measured on the fly");
    return p;
  }
  const Calibration c = Calibration::read(path);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(model_path, ec);
  if (c.model_file != std::filesystem::path(model_path).filename().string() || c.model_size != size) {
    log_warn(path, " was measured for ", c.model_file, " (", c.model_size, " bytes), not this model: not used");
    return p;
  }
  const int threads = target_ctx.pool().size();
  const std::string isa = isa_name(kernels::active_isa());
  if (const CalibrationTable* t = c.table(threads, isa)) {
    p.step_table = t->step;
    log_info("step-time table from ", path, " (", threads, " threads, ", isa, ", ", t->step.rows.size(),
             " row counts)");
  } else {
    log_info(path, " has no step-time table for ", threads, " threads and ", isa,
             " kernels: step costs are measured on the fly");
  }
  if (o.model_draft.empty()) return p;
  const DraftCalibration* d = c.draft(o.model_draft, std::filesystem::file_size(o.model_draft, ec));
  if (d == nullptr || d->temperatures.empty()) return p;
  // The temperatures are the block drafter's (the drafter that reads -md and gives confidences).
  p.confidence_temperatures.resize(setup.drafters.size());
  for (size_t i = 0; i < setup.drafters.size(); ++i) {
    if (setup.drafters[i] == setup.block_drafter) p.confidence_temperatures[i] = d->temperatures;
  }
  log_info("confidence temperatures for ", o.model_draft, " from ", path, " (", d->temperatures.size(),
           " positions)");
  return p;
}

namespace {

nlohmann::json drafter_json(const DrafterStats& s) {
  nlohmann::json j;
  j["name"] = s.name;
  j["drafts"] = s.drafts;
  j["drafts_accepted"] = s.drafts_accepted;
  j["drafted"] = s.drafted;
  j["accepted"] = s.accepted;
  j["verify_steps"] = s.drafts;
  j["acceptance_rate"] = s.acceptance_rate();
  j["mean_accepted_length"] = s.mean_accepted_length();
  j["per_position"] = s.acceptance_per_position();
  j["draft_s"] = s.t_draft;
  j["commit_s"] = s.t_commit;
  return j;
}

}  // namespace

nlohmann::json spec_stats_json(const GenerationStats& stats) {
  nlohmann::json j = drafter_json(stats.total());
  j.erase("name");
  j["target_decodes"] = stats.decodes;
  j["seq_steps"] = stats.seq_steps;
  j["tokens_per_step"] =
      stats.seq_steps > 0 ? static_cast<double>(stats.generated) / static_cast<double>(stats.seq_steps) : 0.0;
  j["draft_s"] = stats.t_draft;
  j["verify_s"] = stats.t_verify;
  j["commit_s"] = stats.t_commit;
  j["drafters"] = nlohmann::json::array();
  for (const DrafterStats& d : stats.drafters) j["drafters"].push_back(drafter_json(d));
  return j;
}

}  // namespace fulgur::cli
