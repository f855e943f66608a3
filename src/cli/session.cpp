#include "cli/session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tokenizer/gguf_vocab.h"

namespace fulgur::cli {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Stats stats(std::vector<double> v) {
  FULGUR_CHECK(!v.empty(), "stats of no measurements");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {median, v.front(), v.back()};
}

double time_batch(Context& ctx, Batch& batch, const std::vector<int32_t>& ids, int pos, int rows) {
  ctx.seq_cp(0, 1, 0, -1);
  batch.clear();
  for (int i = 0; i < rows; ++i) batch.add(ids[(pos + i) % ids.size()], pos + i, 1, true);
  const double t0 = now_seconds();
  ctx.decode(batch);
  const double t = now_seconds() - t0;
  ctx.seq_rm(1, 0, -1);
  return t;
}

LoadedModel load_model(const std::string& path, bool need_tokenizer, const ModelOptions& options) {
  LoadedModel out;
  const double t0 = now_seconds();
  out.model = std::make_unique<Model>(path, options);
  if (out.model->gguf().has("tokenizer.ggml.tokens")) {
    out.tokenizer = std::make_unique<Tokenizer>(read_vocab(out.model->gguf()));
  } else {
    FULGUR_CHECK(!need_tokenizer, "'", path, "' has no tokenizer (tokenizer.ggml.* keys); pass token ids with --prompt-ids");
  }
  out.load_seconds = now_seconds() - t0;
  return out;
}

void add_model_options(CLI::App* cmd, ModelOptions& options) {
  if (const char* dir = std::getenv("FULGUR_TILE_CACHE")) options.tile_cache_dir = dir;
  if (const char* pack = std::getenv("FULGUR_PACK")) options.pack = std::string(pack) != "0";
  cmd->add_option("--tile-cache", options.tile_cache_dir,
                  "keep the weights repacked at load in DIR/<model>.<hash>.tiles, so the next "
                  "load maps them instead of repacking (a second copy of the weights on disk; "
                  "default: $FULGUR_TILE_CACHE)");
  cmd->add_flag_callback("--no-pack", [&options] { options.pack = false; },
                         "keep the file's weight layout instead of repacking into 16-row tiles "
                         "(default: off, or $FULGUR_PACK=0)");
  // llama.cpp's RoPE overrides, for running a model past its trained context.
  cmd->add_option("--rope-scaling", options.rope.scaling,
                  "RoPE context scaling: none, linear or yarn (default: the file's rope.scaling.type)")
      ->check(CLI::IsMember({"none", "linear", "yarn"}));
  cmd->add_option("--rope-freq-base", options.rope.freq_base,
                  "RoPE base frequency (default: the file's rope.freq_base)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rope-freq-scale", options.rope.freq_scale,
                  "RoPE frequency scaling factor: positions are stretched by 1/N (default: 1 / the file's "
                  "rope.scaling.factor)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--yarn-orig-ctx", options.rope.yarn_orig_ctx,
                  "YaRN's original training context (default: the file's rope.scaling."
                  "original_context_length, else its context_length)")
      ->check(CLI::PositiveNumber);
}

std::vector<int32_t> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FULGUR_CHECK(used > 0 && used == item.size() && v >= 0 && v <= INT32_MAX, "bad token id '", item,
                 "' in '", text, "'");
    ids.push_back(static_cast<int32_t>(v));
  }
  FULGUR_CHECK(!ids.empty(), "empty token id list");
  return ids;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in.good(), "cannot read '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace fulgur::cli
