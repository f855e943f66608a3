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

}  // namespace fulgur::cli
