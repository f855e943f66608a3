#include "convert/quant_mix.h"

#include <algorithm>
#include <numeric>
#include <regex>

#include "convert/quant_policy.h"
#include "core/ascii.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

// Mix ids, for the rules below (the llama_ftype numbers, so they read like llama.cpp's).
enum Ftype : uint32_t {
  kAllF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 7, kQ5_0 = 8, kQ5_1 = 9,
  kQ2_K = 10, kQ2_K_S = 21, kQ3_K_S = 11, kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15,
  kQ5_K_S = 16, kQ5_K_M = 17, kQ6_K = 18, kIQ4_NL = 25, kIQ4_XS = 30, kBF16 = 32, kTQ1_0 = 36, kTQ2_0 = 37,
  kIQ2_XXS = 19, kIQ2_XS = 20, kIQ3_XS = 22, kIQ3_XXS = 23, kIQ1_S = 24, kIQ3_S = 26, kIQ3_M = 27, kIQ2_S = 28,
  kIQ2_M = 29, kIQ1_M = 31,
};

// The 1- and 2-bit codebook mixes, which llama.cpp treats as one family (attn_v, ffn_down,
// attn_output and the embeddings get more bits), IQ2_S / IQ2_M lifting with IQ3_S where the
// others use Q2_K.
bool low_bit_mix(uint32_t f) {
  return f == kIQ2_XXS || f == kIQ2_XS || f == kIQ2_S || f == kIQ2_M || f == kIQ1_S || f == kIQ1_M;
}
bool iq2s_family(uint32_t f) { return f == kIQ2_S || f == kIQ2_M; }

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// llama.cpp's broad tensor kinds, from the name.
enum class Category { kTokenEmbd, kAttnQ, kAttnV, kAttnK, kAttnQkv, kAttnKvB, kAttnOutput, kFfnUp, kFfnGate, kFfnDown, kOutput, kOther };

Category category_of(std::string_view n) {
  if (n == "output.weight") return Category::kOutput;
  if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  if (contains(n, "attn_qkv.weight")) return Category::kAttnQkv;
  if (contains(n, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (contains(n, "attn_v.weight")) return Category::kAttnV;
  if (contains(n, "attn_k.weight")) return Category::kAttnK;
  if (contains(n, "attn_q.weight")) return Category::kAttnQ;
  if (contains(n, "attn_output.weight")) return Category::kAttnOutput;
  if (contains(n, "ffn_up")) return Category::kFfnUp;
  if (contains(n, "ffn_gate")) return Category::kFfnGate;
  if (contains(n, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// attn_v and the fused tensors that hold it share its rules (and its counter).
bool attn_v_like(Category c) { return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB; }

// The N of a leading "blk.N." (as sscanf("blk.%d.") reads it), or -1.
int64_t layer_of(std::string_view n) {
  if (!n.starts_with("blk.")) return -1;
  size_t i = 4;
  int64_t v = 0;
  for (; i < n.size() && n[i] >= '0' && n[i] <= '9'; ++i) v = v * 10 + (n[i] - '0');
  return i > 4 ? v : -1;
}

// ggml_n_dims: dimensions up to the last one above 1.
int n_dims_of(const QuantTensor& t) {
  for (int i = 3; i >= 1; --i) {
    if (t.ne[i] > 1) return i + 1;
  }
  return 1;
}

bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

struct State {
  const QuantMix& mix;
  const QuantModel& model;
  bool has_imatrix;
  const QuantOptions& options;
  bool tied = true;  // no output.weight: token_embd is also the head
  int64_t n_attn_v = 0, i_attn_v = 0;
  int64_t i_ffn_down = 0;
  int64_t i_ffn_gate = 0, i_ffn_up = 0;
};

// (layer, n_layer) of an FFN tensor: from its name on a model with experts (llama.cpp does not
// trust the counter there), else the counter.
int64_t ffn_layer(const State& s, int64_t counter, const std::string& name) {
  if (std::max<int64_t>(1, s.model.n_expert) <= 1) return counter;
  const int64_t layer = layer_of(name);
  FULGUR_CHECK(layer >= 0, "quantize: cannot tell the layer of tensor '", name, "'");
  FULGUR_CHECK(layer < s.model.n_layer, "quantize: tensor '", name, "' is in layer ", layer, " of a model of ",
               s.model.n_layer);
  return layer;
}

// The 1- and 2-bit mixes' rules past the embeddings (llama.cpp checks them before all others, so
// neither the 70B nor the 8-expert attn_v rules apply to them). ffn_down counts its tensors in
// llama.cpp's order whatever the model (no layer from the name here, unlike the other mixes).
DType low_bit_rule(State& s, DType t, Category c) {
  const uint32_t f = s.mix.file_type;
  const DType lifted = iq2s_family(f) ? DType::kIQ3_S : DType::kQ2_K;
  if (attn_v_like(c)) {
    ++s.i_attn_v;
    return s.model.n_gqa() >= 4 || s.model.n_expert >= 4 ? DType::kQ4_K : lifted;
  }
  if (c == Category::kAttnK && s.model.n_expert == 8) return DType::kQ4_K;
  if (c == Category::kFfnDown) return s.i_ffn_down++ < s.model.n_layer / 8 ? lifted : t;
  if (c == Category::kAttnOutput) {
    if (s.model.n_expert == 8) return DType::kQ5_K;
    if (f == kIQ1_S || f == kIQ1_M) return DType::kIQ2_XXS;
    if (iq2s_family(f)) return DType::kIQ3_S;
  }
  return t;
}

// The mix's choice for a quantizable tensor before the shape fallback.
DType mix_rule(State& s, DType t, const QuantTensor& tensor, Category c) {
  const uint32_t f = s.mix.file_type;
  const int64_t n_expert = s.model.n_expert;
  if (c == Category::kOutput || (s.tied && c == Category::kTokenEmbd)) {
    if (s.options.output_type) return *s.options.output_type;
    if (tensor.ne[0] % dtype_info(t).block_size != 0) return DType::kQ8_0;
    if (low_bit_mix(f) || f == kIQ3_XXS) return DType::kQ5_K;
    return t == DType::kQ8_0 ? t : DType::kQ6_K;
  }
  if (c == Category::kTokenEmbd) {  // untied
    if (f == kIQ2_XXS || f == kIQ2_XS || f == kIQ1_S || f == kIQ1_M) return DType::kQ2_K;
    if (iq2s_family(f) || f == kIQ3_XXS) return DType::kIQ3_S;
    return f == kTQ1_0 || f == kTQ2_0 ? DType::kQ4_K : t;
  }
  if (low_bit_mix(f)) return low_bit_rule(s, t, c);
  if (attn_v_like(c)) {
    const int64_t i = s.i_attn_v++;
    if (f == kQ2_K) {
      t = s.model.n_gqa() >= 4 ? DType::kQ4_K : DType::kQ3_K;
    } else if (f == kQ2_K_S && s.model.n_gqa() >= 4) {
      t = DType::kQ4_K;
    } else if (f == kIQ3_XXS) {
      t = s.model.n_gqa() >= 4 ? DType::kQ4_K : !s.has_imatrix ? DType::kIQ3_S : DType::kIQ3_XXS;
    } else if ((f == kIQ3_XS || f == kIQ3_S) && s.model.n_gqa() >= 4) {
      t = DType::kQ4_K;
    } else if (f == kIQ3_M) {
      t = DType::kQ4_K;
    } else if (f == kQ3_K_M) {
      t = i < 2 ? DType::kQ5_K : DType::kQ4_K;
    } else if (f == kQ3_K_L) {
      t = DType::kQ5_K;
    } else if ((f == kIQ4_NL || f == kIQ4_XS) && s.model.n_gqa() >= 4) {
      t = DType::kQ5_K;
    } else if ((f == kQ4_K_M || f == kQ5_K_M) && more_bits_layer(i, s.n_attn_v)) {
      t = DType::kQ6_K;
    } else if (f == kQ4_K_S && i < 4) {
      t = DType::kQ5_K;
    }
    if (s.model.is_70b && (t == DType::kQ3_K || t == DType::kQ4_K)) t = DType::kQ5_K;
    if (n_expert == 8) t = DType::kQ8_0;
    return t;
  }
  if (c == Category::kAttnK) {
    if (n_expert == 8) return DType::kQ8_0;
    return f == kIQ3_XS ? DType::kIQ3_XXS : f == kIQ3_XXS ? DType::kIQ2_S : t;
  }
  if (c == Category::kAttnQ) return f == kIQ3_XS ? DType::kIQ3_XXS : f == kIQ3_XXS ? DType::kIQ2_S : t;
  if ((c == Category::kFfnGate || c == Category::kFfnUp) && f == kIQ3_XS) {  // the only mix that reads them
    int64_t& counter = c == Category::kFfnGate ? s.i_ffn_gate : s.i_ffn_up;
    const int64_t i = ffn_layer(s, counter++, tensor.name), n = s.model.n_layer;
    return i >= n / 8 && i < 7 * n / 8 ? DType::kIQ3_XXS : t;
  }
  if (c == Category::kFfnDown) {
    const int64_t i = ffn_layer(s, s.i_ffn_down++, tensor.name), n = s.model.n_layer;
    if (f == kQ2_K) {
      t = DType::kQ3_K;
    } else if (f == kQ2_K_S) {
      if (i < n / 8) t = DType::kQ4_K;
    } else if (f == kIQ3_XXS && !s.has_imatrix) {
      t = i < n / 8 ? DType::kQ4_K : DType::kQ3_K;
    } else if (f == kQ3_K_M) {
      t = i < n / 16 ? DType::kQ5_K : DType::kQ4_K;
    } else if (f == kIQ3_M && (i < n / 8 || (n_expert == 8 && more_bits_layer(i, n)))) {
      t = DType::kQ4_K;
    } else if (f == kQ3_K_L) {
      t = DType::kQ5_K;
    } else if (f == kQ4_K_M) {
      if (more_bits_layer(i, n)) t = DType::kQ6_K;
    } else if (i < n / 8 && (f == kIQ4_NL || f == kIQ4_XS) && !s.has_imatrix) {
      t = DType::kQ5_K;
    } else if (f == kQ5_K_M && more_bits_layer(i, n)) {
      t = DType::kQ6_K;
    } else if (f == kQ4_K_S && i < n / 8) {
      t = DType::kQ5_K;
    } else if ((f == kQ4_0 || f == kQ5_0) && s.has_imatrix && i < n / 8) {
      t = f == kQ4_0 ? DType::kQ4_1 : DType::kQ5_1;
    }
    return t;
  }
  if (c == Category::kAttnOutput) {
    if (n_expert == 8) {
      if (f == kQ2_K || f == kQ3_K_S || f == kQ3_K_M || f == kIQ4_NL || f == kQ4_K_S || f == kQ4_K_M ||
          f == kIQ4_XS || f == kIQ3_XS || f == kIQ3_XXS || f == kIQ3_S || f == kIQ3_M) {
        t = DType::kQ5_K;
      }
    } else if (f == kQ2_K) {
      t = DType::kQ3_K;
    } else if (f == kIQ3_XXS) {
      t = DType::kIQ3_S;
    } else if (f == kQ3_K_M || f == kIQ3_M) {
      t = DType::kQ4_K;
    } else if (f == kQ3_K_L) {
      t = DType::kQ5_K;
    }
    return t;
  }
  return t;  // attn_q, ffn_gate, ffn_up and the rest: the default for these mixes
}

// A type whose block divides ne0.
DType shape_fallback(DType t, int64_t ne0) {
  if (ne0 % dtype_info(t).block_size == 0) return t;
  DType f = t;
  switch (t) {
    case DType::kIQ1_S:
    case DType::kIQ1_M:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S:
    case DType::kIQ4_XS: f = DType::kIQ4_NL; break;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kTQ1_0:
    case DType::kTQ2_0: f = DType::kQ4_0; break;
    case DType::kQ4_K: f = DType::kQ5_0; break;
    case DType::kQ5_K: f = DType::kQ5_1; break;
    case DType::kQ6_K: f = DType::kQ8_0; break;
    default:
      FULGUR_CHECK(dtype_info(t).block_size <= 32, "quantize: no fallback for type ", dtype_name(t));
  }
  return ne0 % dtype_info(f).block_size == 0 ? f : DType::kF16;
}

}  // namespace

const std::vector<QuantMix>& quant_mixes() {
  static const std::vector<QuantMix> mixes = {
      {"Q4_0", kQ4_0, DType::kQ4_0},       {"Q4_1", kQ4_1, DType::kQ4_1},
      {"Q5_0", kQ5_0, DType::kQ5_0},       {"Q5_1", kQ5_1, DType::kQ5_1},
      {"IQ4_NL", kIQ4_NL, DType::kIQ4_NL}, {"IQ4_XS", kIQ4_XS, DType::kIQ4_XS},
      {"TQ1_0", kTQ1_0, DType::kTQ1_0},    {"TQ2_0", kTQ2_0, DType::kTQ2_0},
      {"IQ2_XXS", kIQ2_XXS, DType::kIQ2_XXS}, {"IQ2_XS", kIQ2_XS, DType::kIQ2_XS},
      {"IQ2_S", kIQ2_S, DType::kIQ2_XS},   {"IQ2_M", kIQ2_M, DType::kIQ2_S},
      {"IQ3_XXS", kIQ3_XXS, DType::kIQ3_XXS}, {"IQ3_XS", kIQ3_XS, DType::kIQ3_S},
      {"IQ3_S", kIQ3_S, DType::kIQ3_S},    {"IQ3_M", kIQ3_M, DType::kIQ3_S},
      {"IQ1_S", kIQ1_S, DType::kIQ1_S},    {"IQ1_M", kIQ1_M, DType::kIQ1_M},
      {"Q2_K", kQ2_K, DType::kQ2_K},       {"Q2_K_S", kQ2_K_S, DType::kQ2_K},
      {"Q3_K_S", kQ3_K_S, DType::kQ3_K},
      {"Q3_K_M", kQ3_K_M, DType::kQ3_K},   {"Q3_K_L", kQ3_K_L, DType::kQ3_K},
      {"Q4_K_S", kQ4_K_S, DType::kQ4_K},   {"Q4_K_M", kQ4_K_M, DType::kQ4_K},
      {"Q5_K_S", kQ5_K_S, DType::kQ5_K},   {"Q5_K_M", kQ5_K_M, DType::kQ5_K},
      {"Q6_K", kQ6_K, DType::kQ6_K},       {"Q8_0", kQ8_0, DType::kQ8_0},
      {"F16", kF16, DType::kF16},          {"BF16", kBF16, DType::kBF16},
      {"F32", kAllF32, DType::kF32},
  };
  return mixes;
}

const QuantMix* find_quant_mix(std::string_view name) {
  const std::string up = ascii_upper(name);
  for (const QuantMix& m : quant_mixes()) {
    if (m.name == up) return &m;
  }
  return nullptr;
}

std::string quant_mix_list() {
  std::string s;
  for (const QuantMix& m : quant_mixes()) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

const std::vector<std::string>& quant_archs() {
  static const std::vector<std::string> archs = {"qwen3", "qwen3moe", "qwen2", "llama"};
  return archs;
}

namespace {

// A per-layer hparam: the scalar, or layer 0's entry of an array.
int64_t layer0(const GgufReader& r, const std::string& key, int64_t fallback) {
  const GgufValue* v = r.find(key);
  if (v == nullptr) return fallback;
  if (!v->is_array()) return v->get_int<int64_t>(r.what(key));
  FULGUR_CHECK(v->size() > 0, r.what(key), " is an empty array");
  return v->element(0).get_int<int64_t>(r.what(key));
}

}  // namespace

QuantModel quant_model_of(const GgufReader& r) {
  QuantModel m;
  m.arch = r.get_string("general.architecture");
  const std::vector<std::string>& archs = quant_archs();
  if (std::find(archs.begin(), archs.end(), m.arch) == archs.end()) {
    std::string list;
    for (const std::string& a : archs) list += (list.empty() ? "" : ", ") + a;
    fail(r.where(), ": quantize does not know llama.cpp's rules for arch '", m.arch, "' (it covers ", list, ")");
  }
  m.n_layer = r.get_i64(m.arch + ".block_count");
  FULGUR_CHECK(m.n_layer > 0, r.what(m.arch + ".block_count"), " is ", m.n_layer);
  m.n_head = layer0(r, m.arch + ".attention.head_count", 0);
  m.n_head_kv = layer0(r, m.arch + ".attention.head_count_kv", m.n_head);
  m.n_expert = r.get_i64(m.arch + ".expert_count", 0);
  m.is_70b = m.n_layer == 80 && ((m.arch == "llama" && m.n_head != m.n_head_kv) || m.arch == "qwen2");
  return m;
}

bool quant_allows(const QuantTensor& t, bool quantize_output) {
  if (n_dims_of(t) < 2) return false;
  const std::string_view n = t.name;
  if (!n.ends_with("weight")) return false;
  if (!quantize_output && n == "output.weight") return false;
  if (n == "position_embd.weight" || n == "token_types.weight") return false;
  static const std::string_view kKept[] = {
      "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
      "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
      "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
      "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
      "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
      "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
      "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
      "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
  };
  for (std::string_view k : kKept) {
    if (contains(n, k)) return false;
  }
  return true;
}

DType parse_quant_type(std::string_view name, std::string_view option) {
  const DTypeInfo* info = find_dtype(name);
  FULGUR_CHECK(info != nullptr, option, ": unknown type '", name, "' (ggml's names: f32, f16, bf16, q8_0, q4_K, iq4_xs, ...)");
  FULGUR_CHECK(can_quantize(info->type) && info->type != DType::kF64 && info->type != DType::kI8 &&
                   info->type != DType::kI16 && info->type != DType::kI32 && info->type != DType::kI64,
               option, ": fulgur cannot write weights of type ", info->name);
  return info->type;
}

QuantTypeOverride parse_tensor_type_option(std::string_view arg) {
  const size_t eq = arg.find('=');
  FULGUR_CHECK(eq != std::string_view::npos, "--tensor-type: '", arg, "' is not PATTERN=TYPE");
  FULGUR_CHECK(eq > 0, "--tensor-type: '", arg, "' has no tensor name pattern before '='");
  FULGUR_CHECK(eq + 1 < arg.size(), "--tensor-type: '", arg, "' has no type after '='");
  QuantTypeOverride o;
  o.pattern = ascii_lower(arg.substr(0, eq));
  o.type = parse_quant_type(arg.substr(eq + 1), "--tensor-type " + std::string(arg));
  try {
    const std::regex compiled(o.pattern);
  } catch (const std::regex_error& e) {
    fail("--tensor-type: '", o.pattern, "' is not a regular expression (", e.what(), ")");
  }
  return o;
}

std::vector<DType> quant_types(const QuantMix& mix, const QuantModel& model,
                               const std::vector<QuantTensor>& tensors, bool has_imatrix,
                               const QuantOptions& options, std::vector<int64_t>* matched) {
  State s{mix, model, has_imatrix, options};
  std::vector<Category> cats;
  for (const QuantTensor& t : tensors) {
    cats.push_back(category_of(t.name));
    if (attn_v_like(cats.back())) ++s.n_attn_v;
    if (cats.back() == Category::kOutput) s.tied = false;
  }
  std::vector<std::regex> patterns;
  for (const QuantTypeOverride& o : options.tensor_types) patterns.emplace_back(o.pattern);
  if (matched != nullptr) matched->assign(patterns.size(), 0);
  // The first pattern found in the name, or -1.
  auto pattern_of = [&patterns](const std::string& name) {
    for (size_t p = 0; p < patterns.size(); ++p) {
      if (std::regex_search(name, patterns[p])) return static_cast<int64_t>(p);
    }
    return int64_t{-1};
  };
  // A type given for one tensor as is (no fallback): its block must divide the rows.
  auto given = [](DType type, const QuantTensor& t, std::string_view option) {
    FULGUR_CHECK(t.ne[0] % dtype_info(type).block_size == 0, "quantize: ", option, " ", dtype_name(type), ": tensor '",
                 t.name, "' has rows of ", t.ne[0], " values, not a multiple of ", dtype_name(type), "'s block of ",
                 dtype_info(type).block_size);
    return type;
  };
  // llama.cpp's order: by block (non-block tensors first), then by name.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    if (la != lb) return la < lb;
    return tensors[a].name < tensors[b].name;
  });
  std::vector<DType> out(tensors.size());
  for (size_t i : order) {
    const QuantTensor& t = tensors[i];
    const Category c = cats[i];
    DType type = t.type;
    if (!quant_allows(t, options.quantize_output)) {
      out[i] = type;
      continue;
    }
    if (options.token_embedding_type && c == Category::kTokenEmbd &&
        (t.name != "per_layer_token_embd.weight" || pattern_of(t.name) < 0)) {
      out[i] = given(*options.token_embedding_type, t, "--token-embedding-type");
      continue;
    }
    if (options.output_type && c == Category::kOutput) {
      out[i] = given(*options.output_type, t, "--output-tensor-type");
      continue;
    }
    type = mix.default_type;
    if (!is_float_type(type)) {
      const int64_t p = pattern_of(t.name);
      if (p >= 0) {
        type = options.tensor_types[static_cast<size_t>(p)].type;
        if (matched != nullptr) ++(*matched)[static_cast<size_t>(p)];
      } else if (!options.pure) {
        type = mix_rule(s, type, t, c);
      }
      type = shape_fallback(type, t.ne[0]);
    }
    out[i] = type;
  }
  return out;
}

}  // namespace fulgur

namespace fulgur {

bool quant_needs_imatrix(const QuantMix& mix, std::string_view name, DType type) {
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
  switch (type) {
    case DType::kIQ3_XXS:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
      return true;
    case DType::kQ2_K:
      return mix.file_type == kQ2_K_S;
    default:
      return false;
  }
}

}  // namespace fulgur
