#include "model/desc.h"

#include <algorithm>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace fulgur {
namespace {

template <class Fn>
int64_t max_over(const std::vector<LayerDesc>& layers, Fn&& fn) {
  int64_t best = 0;
  for (const LayerDesc& l : layers) best = std::max(best, fn(l));
  return best;
}

}  // namespace

const char* mixer_kind_name(MixerKind kind) {
  switch (kind) {
    case MixerKind::kNone: return "none";
    case MixerKind::kAttention: return "attention";
    case MixerKind::kGatedDeltaNet: return "gated_delta_net";
    case MixerKind::kMamba2: return "mamba2";
  }
  return "?";
}

const char* ffn_kind_name(FfnKind kind) {
  switch (kind) {
    case FfnKind::kNone: return "none";
    case FfnKind::kSwiGlu: return "swiglu";
    case FfnKind::kRelu2: return "relu2";
    case FfnKind::kGeGlu: return "geglu";
    case FfnKind::kMoe: return "moe";
  }
  return "?";
}

FfnAct dense_ffn_act(FfnKind kind) {
  switch (kind) {
    case FfnKind::kSwiGlu: return FfnAct::kSwiGlu;
    case FfnKind::kRelu2: return FfnAct::kRelu2;
    case FfnKind::kGeGlu: return FfnAct::kGeGlu;
    default: fail("feed-forward kind '", ffn_kind_name(kind), "' is not a dense feed-forward");
  }
}

bool is_dense_ffn(FfnKind kind) {
  return kind == FfnKind::kSwiGlu || kind == FfnKind::kRelu2 || kind == FfnKind::kGeGlu;
}

bool ModelDesc::has(MixerKind kind) const {
  return std::any_of(layers.begin(), layers.end(), [&](const LayerDesc& l) { return l.mixer == kind; });
}

bool ModelDesc::has(FfnKind kind) const {
  return std::any_of(layers.begin(), layers.end(), [&](const LayerDesc& l) { return l.ffn == kind; });
}

int64_t ModelDesc::max_q_width() const {
  return max_over(layers, [](const LayerDesc& l) {
    return l.mixer == MixerKind::kAttention ? l.attn.q_width() : int64_t{0};
  });
}

int64_t ModelDesc::max_kv_width() const {
  return max_over(layers, [](const LayerDesc& l) {
    return l.mixer == MixerKind::kAttention ? l.attn.kv_width() : int64_t{0};
  });
}

int64_t ModelDesc::max_ff() const {
  return max_over(layers, [](const LayerDesc& l) {
    if (is_dense_ffn(l.ffn)) return l.n_ff;
    if (l.ffn == FfnKind::kMoe) return std::max(l.moe.n_ff_exp, l.moe.n_ff_shared);
    return int64_t{0};
  });
}

bool ModelDesc::uses_rope() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerDesc& l) {
    return l.mixer == MixerKind::kAttention && l.attn.rope;
  });
}

int64_t ModelDesc::max_expert_used() const {
  return max_over(layers, [](const LayerDesc& l) {
    return l.ffn == FfnKind::kMoe ? l.moe.n_expert_used : int64_t{0};
  });
}

int64_t ModelDesc::max_expert_count() const {
  return max_over(layers, [](const LayerDesc& l) {
    return l.ffn == FfnKind::kMoe ? l.moe.n_expert : int64_t{0};
  });
}

namespace {
bool keeps_kv(const LayerDesc& l, int32_t window) {
  return l.mixer == MixerKind::kAttention && l.attn.owns_kv() && l.attn.window == window;
}
}  // namespace

std::vector<int64_t> ModelDesc::kv_heads(int32_t window) const {
  std::vector<int64_t> heads;
  for (const LayerDesc& l : layers) heads.push_back(keeps_kv(l, window) ? l.attn.n_head_kv : 0);
  return heads;
}

std::vector<int64_t> ModelDesc::kv_head_dims(int32_t window) const {
  std::vector<int64_t> dims;
  for (const LayerDesc& l : layers) dims.push_back(keeps_kv(l, window) ? l.attn.head_dim : 0);
  return dims;
}

int32_t ModelDesc::max_window() const {
  int32_t w = 0;
  for (const LayerDesc& l : layers) {
    if (l.mixer == MixerKind::kAttention) w = std::max(w, l.attn.window);
  }
  return w;
}

int64_t ModelDesc::input_width() const {
  int64_t w = 0;
  for (const InputPart& p : input) w += p.width;
  return w;
}

int64_t ModelDesc::aux_width() const {
  int64_t w = 0;
  for (const InputPart& p : input) w += p.token ? 0 : p.width;
  return w;
}

PerLayerKey::PerLayerKey(const GgufReader& gguf, std::string key, int64_t n_layer,
                         int64_t fallback)
    : key_(std::move(key)) {
  const GgufValue* value = gguf.find(key_);
  present_ = value != nullptr;
  if (value == nullptr) {
    FULGUR_CHECK(fallback >= 0, gguf.what(key_), " is missing");
    values_.assign(static_cast<size_t>(n_layer), fallback);
  } else if (value->type() != GgufType::kArray) {
    values_.assign(static_cast<size_t>(n_layer), value->get_int<int64_t>(gguf.what(key_)));
  } else {
    values_ = value->get_int_array<int64_t>(gguf.what(key_));
    FULGUR_CHECK(static_cast<int64_t>(values_.size()) == n_layer, gguf.what(key_),
                 " has wrong array length: expected ", n_layer, " (block_count), got ",
                 values_.size());
  }
}

int64_t PerLayerKey::at(int64_t layer) const {
  FULGUR_CHECK(layer >= 0 && layer < static_cast<int64_t>(values_.size()), "key '", key_,
               "': layer ", layer, " is outside [0, ", values_.size(), ")");
  return values_[static_cast<size_t>(layer)];
}

}  // namespace fulgur
