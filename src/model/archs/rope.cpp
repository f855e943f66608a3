#include <cmath>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/archs/archs.h"
#include "model/model.h"

namespace fulgur {

void read_rope_keys(const GgufReader& gguf, const std::string& arch, ModelDesc& d) {
  const std::string a = arch + ".rope.";
  kernels::RopeParams& r = d.rope;
  r.freq_base = gguf.get_f32(a + "freq_base", 10000.0f);
  // Context scaling (llama.cpp's hparams): the factor stretches positions by 1/freq_scale. The
  // older key rope.scale_linear is read as llama.cpp still does; rope.scaling.factor wins.
  float factor = gguf.get_f32(a + "scale_linear", 0.0f);
  factor = gguf.get_f32(a + "scaling.factor", factor);
  FULGUR_CHECK(std::isfinite(factor) && factor >= 0.0f, gguf.where(), ": ", a, "scaling.factor ", factor,
               " must be >= 0 (0: no scaling)");
  const std::string type = gguf.get_string(a + "scaling.type", factor > 0.0f ? "linear" : "none");
  FULGUR_CHECK(type == "none" || type == "linear" || type == "yarn", gguf.where(), ": ", a, "scaling.type '",
               type, "' is not supported (fulgur runs none, linear and yarn; llama3-style scaling comes as the "
               "rope_freqs tensor)");
  r.freq_scale = type == "none" || factor == 0.0f ? 1.0f : 1.0f / factor;
  r.n_ctx_orig = gguf.get_i64(a + "scaling.original_context_length", d.n_ctx_train);
  if (type == "yarn") {
    // llama.cpp's defaults for a YaRN model: full extrapolation mix, betas 32 / 1.
    r.ext_factor = gguf.get_f32(a + "scaling.yarn_ext_factor", 1.0f);
    r.attn_factor = gguf.get_f32(a + "scaling.yarn_attn_factor", gguf.get_f32(a + "scaling.attn_factor", 1.0f));
    r.beta_fast = gguf.get_f32(a + "scaling.yarn_beta_fast", 32.0f);
    r.beta_slow = gguf.get_f32(a + "scaling.yarn_beta_slow", 1.0f);
    FULGUR_CHECK(r.n_ctx_orig > 0, gguf.where(), ": YaRN needs ", a, "scaling.original_context_length > 0");
  }
  // llama3-style per-pair frequency factors: one tensor for every layer.
  if (const GgufTensorInfo* t = gguf.find_tensor("rope_freqs.weight")) {
    FULGUR_CHECK(t->type == DType::kF32 && t->n_dims == 1 && t->ne[0] == r.n_rot / 2, gguf.where(),
                 ": tensor 'rope_freqs.weight' must be f32 of shape {", r.n_rot / 2, "} (n_rot / 2), got ",
                 dtype_name(t->type), " with ", t->ne[0], " elements");
    r.freq_factors = reinterpret_cast<const float*>(t->data);
    for (int64_t i = 0; i < r.n_rot / 2; ++i) {
      FULGUR_CHECK(std::isfinite(r.freq_factors[i]) && r.freq_factors[i] > 0.0f, gguf.where(),
                   ": rope_freqs[", i, "] = ", r.freq_factors[i], " must be finite and positive");
    }
  }
}

void apply_rope_overrides(const RopeOverrides& o, kernels::RopeParams& r, int64_t n_ctx_train) {
  if (!o.scaling.empty()) {
    FULGUR_CHECK(o.scaling == "none" || o.scaling == "linear" || o.scaling == "yarn", "--rope-scaling '",
                 o.scaling, "': expected none, linear or yarn");
    if (o.scaling == "none") r.freq_scale = 1.0f;
    r.ext_factor = o.scaling == "yarn" ? 1.0f : 0.0f;
    if (o.scaling == "yarn" && r.n_ctx_orig <= 0) r.n_ctx_orig = n_ctx_train;
  }
  if (o.freq_base > 0.0f) r.freq_base = o.freq_base;
  if (o.freq_scale > 0.0f) r.freq_scale = o.freq_scale;
  if (o.yarn_orig_ctx > 0) r.n_ctx_orig = o.yarn_orig_ctx;
  FULGUR_CHECK(o.freq_base >= 0.0f && o.freq_scale >= 0.0f && o.yarn_orig_ctx >= 0,
               "--rope-freq-base, --rope-freq-scale and --yarn-orig-ctx must be positive (0: the file's)");
}

}  // namespace fulgur
