// What `run`, `bench`, `tokenize` (and later `serve`) share: a model file loaded with its
// tokenizer, and parsing of the common options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/context.h"
#include "tokenizer/tokenizer.h"

namespace fulgur::cli {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the GGUF has no tokenizer keys
  double load_seconds = 0;
};

// Maps and binds the model; reads its tokenizer when present (a bad tokenizer is an error).
LoadedModel load_model(const std::string& path, bool need_tokenizer,
                       const ModelOptions& options = {});

// --tile-cache DIR and --no-pack, for every command that loads a model to run it; the
// environment variables FULGUR_TILE_CACHE and FULGUR_PACK=0 are their defaults.
void add_model_options(CLI::App* cmd, ModelOptions& options);

// "1,2,3" -> ids; an error names the bad element.
std::vector<int32_t> parse_id_list(const std::string& text);

// Reads a whole text file; an error names the path.
std::string read_text_file(const std::string& path);

// Seconds on a monotonic clock.
double now_seconds();

// Median and range of repeated measurements (v not empty).
struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v);

// Seconds of one decode of `rows` rows (a verification batch, all flagged for logits) that
// continues sequence 0 at `pos`, run on sequence 1, a copy of sequence 0 (seq_cp: the KV cells
// shared, a recurrent state copied) dropped afterwards: sequence 0 is left as it was in any
// model, with no rollback needed (a recurrent state cannot be cut back like a KV cache).
// `batch` is scratch.
double time_batch(Context& ctx, Batch& batch, const std::vector<int32_t>& ids, int pos, int rows);

}  // namespace fulgur::cli
