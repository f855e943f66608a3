// The speculative-decoding options `run` (and later `serve`) share, named like llama.cpp's
// (reference/llamacpp-speculative.md §1.2; llama.cpp's longer names are accepted as aliases),
// and turning them into drafters. Every check runs before any token is generated.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "model/context.h"
#include "speculative/drafter.h"
#include "speculative/drafters/ngram.h"
#include "speculative/drafters/ngram_cache.h"
#include "speculative/drafters/ngram_map.h"
#include "speculative/drafters/ngram_mod.h"
#include "speculative/generator.h"
#include "speculative/stats.h"

namespace fulgur::cli {

struct SpecCliOptions {
  std::string types;        // --spec
  std::string order = "llama";  // --spec-order: llama (n-gram first) | listed
  std::string model_draft;  // -md
  int n_max = 3;            // --spec-n-max: llama.cpp's --spec-draft-n-max default
  int n_min = 0;
  float p_min = 0.0f;
  bool fixed_n = false;     // --spec-fixed-n: an alias of --spec-schedule fixed
  std::string schedule = "confidence";  // --spec-schedule confidence | adaptive | fixed
  std::string calibration;  // --spec-calibration: the calibration file; empty: MODEL.calibration.json if present
  int threads_draft = 0;
  std::string dflash_block = "trained";  // --spec-dflash-block trained | n-max
  NgramParams ngram;
  NgramMapParams ngram_map_k;    // --spec-ngram-map-k-*
  NgramMapParams ngram_map_k4v;  // --spec-ngram-map-k4v-*
  NgramModParams ngram_mod;      // --spec-ngram-mod-*
  NgramCacheParams ngram_cache;  // --lookup-cache-static / --lookup-cache-dynamic
  bool spec_default = false;     // --spec-default: llama.cpp's preset, ngram-mod added to --spec
};

void add_spec_options(CLI::App* cmd, SpecCliOptions& o);

// CLI11 takes one-letter short options only; llama.cpp's two-letter ones (-md, -td) are
// rewritten in argv to their long names before parsing.
void rewrite_multi_letter_options(int argc, char** argv);

// Parses --spec (unknown names are errors) and checks the option combinations; loads nothing.
void check_spec_options(const SpecCliOptions& o);

// The drafters for a target, in priority order; owns the draft model and its context.
struct SpecSetup {
  std::unique_ptr<Model> draft_model;
  std::vector<std::unique_ptr<Drafter>> owned;
  std::vector<Drafter*> drafters;
  Drafter* block_drafter = nullptr;  // the DFlash / DSpark drafter among them, if any
  double load_seconds = 0.0;
};

// Loads the draft model (checking its vocabulary against the target's) and builds the drafters.
// `load`: how the draft model is loaded (packing, tile cache), as the target was.
SpecSetup make_spec_setup(const SpecCliOptions& o, const Model& target, Context& target_ctx,
                          const ModelOptions& load);

// The generator's speculative settings: --spec-n-min/-p-min/-schedule, and from the calibration
// file (speculative/calibration.h; --spec-calibration, else beside the model when it exists) the
// step-time table for this context's thread count and kernels and the drafters' confidence
// temperatures. Says in the log what it uses, or that the costs are measured on the fly.
SpecParams spec_params(const SpecCliOptions& o, const std::string& model_path, Context& target_ctx,
                       const SpecSetup& setup);
// The schedule --spec-schedule / --spec-fixed-n ask for (they must not disagree).
SpecSchedule spec_schedule(const SpecCliOptions& o);

// spec: {drafted, accepted, verify_steps, mean_accepted_length, acceptance_rate, per_position,
// ..., drafters: [...]} for --json.
nlohmann::json spec_stats_json(const GenerationStats& stats);

}  // namespace fulgur::cli
