#include "model/hparams.h"

#include <algorithm>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace fulgur {
namespace {

bool is_supported_arch(const std::string& arch) {
  return arch == "qwen3" || arch == "qwen2" || arch == "llama";
}

}  // namespace

int64_t Hparams::max_head_count() const { return *std::max_element(n_head.begin(), n_head.end()); }
int64_t Hparams::max_ff() const { return *std::max_element(n_ff.begin(), n_ff.end()); }
int64_t Hparams::max_kv_width() const {
  return *std::max_element(n_head_kv.begin(), n_head_kv.end()) * head_dim;
}

std::vector<int64_t> read_per_layer(const GgufReader& gguf, const std::string& key,
                                    int64_t n_layer, int64_t fallback) {
  const GgufValue* value = gguf.find(key);
  if (value == nullptr) {
    FULGUR_CHECK(fallback >= 0, gguf.what(key), " is missing");
    return std::vector<int64_t>(n_layer, fallback);
  }
  if (value->type() != GgufType::kArray) {
    return std::vector<int64_t>(n_layer, value->get_int<int64_t>(gguf.what(key)));
  }
  std::vector<int64_t> values = value->get_int_array<int64_t>(gguf.what(key));
  FULGUR_CHECK(static_cast<int64_t>(values.size()) == n_layer, gguf.what(key),
               " has wrong array length: expected ", n_layer, " (block_count), got ",
               values.size());
  return values;
}

Hparams read_hparams(const GgufReader& gguf) {
  Hparams hp;
  hp.arch = gguf.get_string("general.architecture");
  FULGUR_CHECK(is_supported_arch(hp.arch), gguf.where(), ": unsupported architecture '", hp.arch,
               "' (supported: qwen3, qwen2, llama)");
  const std::string a = hp.arch + ".";
  hp.n_embd = gguf.get_i64(a + "embedding_length");
  hp.n_layer = gguf.get_i64(a + "block_count");
  FULGUR_CHECK(hp.n_embd > 0 && hp.n_layer > 0, gguf.where(), ": embedding_length ", hp.n_embd,
               " and block_count ", hp.n_layer, " must be positive");
  hp.n_ctx_train = gguf.get_i64(a + "context_length", 4096);
  hp.n_head = read_per_layer(gguf, a + "attention.head_count", hp.n_layer, -1);
  hp.n_head_kv = read_per_layer(gguf, a + "attention.head_count_kv", hp.n_layer, -1);
  if (!gguf.has(a + "attention.head_count_kv")) hp.n_head_kv = hp.n_head;
  hp.n_ff = read_per_layer(gguf, a + "feed_forward_length", hp.n_layer, -1);
  hp.head_dim = gguf.get_i64(a + "attention.key_length", hp.n_embd / hp.n_head[0]);
  const int64_t value_dim = gguf.get_i64(a + "attention.value_length", hp.head_dim);
  FULGUR_CHECK(value_dim == hp.head_dim, gguf.where(), ": value_length ", value_dim,
               " differs from key_length ", hp.head_dim, " (not supported)");
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    FULGUR_CHECK(hp.n_head[l] > 0 && hp.n_head_kv[l] > 0 && hp.n_head[l] % hp.n_head_kv[l] == 0,
                 gguf.where(), ": layer ", l, " has head_count ", hp.n_head[l], " and head_count_kv ",
                 hp.n_head_kv[l], "; need head_count a positive multiple of head_count_kv");
    FULGUR_CHECK(hp.n_ff[l] > 0, gguf.where(), ": layer ", l, " has feed_forward_length ",
                 hp.n_ff[l]);
  }
  hp.rms_eps = gguf.get_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  hp.rope.freq_base = gguf.get_f32(a + "rope.freq_base", 10000.0f);
  hp.rope.n_rot = gguf.get_i64(a + "rope.dimension_count", hp.head_dim);
  FULGUR_CHECK(hp.rope.n_rot > 0 && hp.rope.n_rot <= hp.head_dim && hp.rope.n_rot % 2 == 0,
               gguf.where(), ": rope.dimension_count ", hp.rope.n_rot,
               " must be even and at most the head dim ", hp.head_dim);
  const std::string scaling = gguf.get_string(a + "rope.scaling.type", "none");
  FULGUR_CHECK(scaling == "none", gguf.where(), ": rope.scaling.type '", scaling,
               "' is not supported yet");
  // The RoPE style is implied by the arch, not stored (archs-gguf.md §2.3): llama.cpp's
  // converter permutes llama's q/k so that adjacent pairs rotate.
  hp.rope.mode = hp.arch == "llama" ? kernels::RopeMode::kNormal : kernels::RopeMode::kNeox;
  hp.qk_norm = hp.arch == "qwen3";
  hp.qkv_bias = hp.arch == "qwen2";
  return hp;
}

}  // namespace fulgur
