#include "convert/convert_plan.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "convert/hf_config.h"
#include "convert/mxfp4_checkpoint.h"
#include "convert/safetensors.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "tensor/quants.h"

namespace fulgur {
namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += cat(i ? ", " : "", s[i]);
  return out + "]";
}

// Rows (units of tp.row_len()) that part p of tp takes from a source of `source_units` units.
int64_t part_rows(const TensorPart& p, int64_t source_units) {
  return p.n_rows >= 0 ? p.n_rows : source_units - p.row0;
}

int64_t part_units(const TensorPlan& tp, const TensorPart& p) {
  return part_rows(p, product(p.hf_shape) / tp.row_len());
}

// Source row of output row r when HF's rotate-half layout [head][half][i] becomes ggml's
// interleaved layout [head][i][half] (the permutation llama.cpp applies to llama q/k).
int64_t permuted_row(int64_t r, int64_t rows, int64_t heads) {
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  const int64_t h = r / head_dim, w = r % head_dim;
  return h * head_dim + (w % 2) * half + w / 2;
}

// A column order covers each row (and excludes the RoPE permutation, which moves a bias's values).
void check_cols(const TensorPlan& tp) {
  if (tp.cols.empty()) return;
  FULGUR_CHECK(tp.permute_heads == 0 && static_cast<int64_t>(tp.cols.size()) == tp.shape[0],
               tp.gguf_name, ": a column order of ", tp.cols.size(), " for rows of ", tp.shape[0]);
  for (int64_t c : tp.cols) {
    FULGUR_CHECK(c >= 0 && c < tp.shape[0], tp.gguf_name, ": column ", c, " outside rows of ", tp.shape[0]);
  }
}

bool is_float(SafetensorsDType dt) {
  return dt == SafetensorsDType::kF32 || dt == SafetensorsDType::kF16 ||
         dt == SafetensorsDType::kBF16 || dt == SafetensorsDType::kF64;
}

constexpr const char* kLmHead = "lm_head.weight";
constexpr const char* kNestedLmHead = "model.lm_head.weight";

// "X" for "X.weight", else "".
std::string weight_base(const std::string& name) {
  return name.ends_with(".weight") ? name.substr(0, name.size() - 7) : std::string();
}

// Whether weight `name` is in the checkpoint, as floats or as NVFP4 parts.
bool has_weight(const Checkpoint& ckpt, const std::string& name) {
  const std::string base = weight_base(name);
  return ckpt.has(name) || (!base.empty() && ckpt.has(base + ".weight_packed"));
}

// One of the tensors a packed (NVFP4 / MXFP4) weight `whole` is stored as, checked.
const SafetensorsTensor& packed_part(const Checkpoint& ckpt, const std::string& name,
                                     SafetensorsDType dtype, const std::vector<int64_t>& shape,
                                     const std::string& whole, const char* format) {
  const SafetensorsTensor* t = ckpt.find(name);
  FULGUR_CHECK(t != nullptr, ckpt.dir(), ": ", format, " weight '", whole, "' has no '", name, "'");
  FULGUR_CHECK(t->dtype == dtype && t->shape == shape, t->file, ": tensor '", name, "' is ",
               safetensors_dtype_name(t->dtype), " ", shape_str(t->shape), ", expected ",
               safetensors_dtype_name(dtype), " ", shape_str(shape));
  return *t;
}

constexpr const char* kMxBlocks = "_blocks";
constexpr const char* kMxScales = "_scales";

// Whether planned tensor `name` is stored as an MXFP4 pair (or half of one).
bool has_mxfp4(const Checkpoint& ckpt, const std::string& name) {
  return ckpt.has(name + kMxBlocks) || ckpt.has(name + kMxScales);
}

// The MXFP4 pair standing for `name` of logical HF shape `shape` [..., cols].
PartSource resolve_mxfp4(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                         const CheckpointQuant& quant, const std::string& needed_for, std::set<std::string>& used) {
  const std::string blocks = name + kMxBlocks, scales = name + kMxScales;
  FULGUR_CHECK(ckpt.has(blocks), ckpt.dir(), ": MXFP4 scales '", scales, "' without their codes '", blocks,
               "' (an MXFP4 weight is stored as both)");
  FULGUR_CHECK(ckpt.has(scales), ckpt.dir(), ": MXFP4 codes '", blocks, "' without their scales '", scales,
               "' (an MXFP4 weight is stored as both)");
  FULGUR_CHECK(quant.mxfp4, ckpt.dir(), ": tensor '", blocks,
               "' is an MXFP4 block but config.json declares no quantization_config with quant_method 'mxfp4'");
  FULGUR_CHECK(!shape.empty() && shape.back() % 32 == 0, ckpt.dir(), ": tensor '", blocks, "' stands for '", name,
               "' ", shape_str(shape), " (", needed_for, "), whose rows do not fill MXFP4's 32-element blocks");
  std::vector<int64_t> scales_shape(shape.begin(), shape.end() - 1);
  scales_shape.push_back(shape.back() / 32);
  std::vector<int64_t> blocks_shape = scales_shape;
  blocks_shape.push_back(16);
  PartSource s;
  s.mx_blocks = &packed_part(ckpt, blocks, SafetensorsDType::kU8, blocks_shape, name, "MXFP4");
  s.mx_scales = &packed_part(ckpt, scales, SafetensorsDType::kU8, scales_shape, name, "MXFP4");
  used.insert({blocks, scales});
  return s;
}

// The source of planned tensor `name` of HF shape `shape`; `used` gets the checkpoint names it
// reads. `needed_for` says who needs it, for messages.
PartSource resolve_part(const Checkpoint& ckpt, const std::string& name,
                        const std::vector<int64_t>& shape, const CheckpointQuant& quant,
                        const std::string& needed_for, std::set<std::string>& used) {
  if (name == kLmHead && !has_weight(ckpt, kLmHead) && has_weight(ckpt, kNestedLmHead)) {
    return resolve_part(ckpt, kNestedLmHead, shape, quant, needed_for, used);
  }
  const std::string base = weight_base(name);
  const std::string packed_name = base + ".weight_packed";
  const bool packed = !base.empty() && ckpt.has(packed_name);
  if (const SafetensorsTensor* t = ckpt.find(name)) {
    FULGUR_CHECK(!packed, ckpt.dir(), ": both '", name, "' and '", packed_name,
                 "' are present (contradictory)");
    FULGUR_CHECK(!has_mxfp4(ckpt, name), ckpt.dir(), ": both '", name, "' and its MXFP4 form '", name, kMxBlocks,
                 "' / '", name, kMxScales, "' are present (contradictory)");
    FULGUR_CHECK(t->shape == shape, t->file, ": tensor '", name, "' has shape ",
                 shape_str(t->shape), " but ", needed_for, " implies ", shape_str(shape));
    FULGUR_CHECK(is_float(t->dtype), t->file, ": tensor '", name, "' has dtype ",
                 safetensors_dtype_name(t->dtype), "; expected F32, F16, BF16 or F64");
    used.insert(name);
    return {.floats = t};
  }
  if (!packed && has_mxfp4(ckpt, name)) return resolve_mxfp4(ckpt, name, shape, quant, needed_for, used);
  FULGUR_CHECK(packed, ckpt.dir(), ": missing tensor '", name, "' (needed for ", needed_for, ")");
  FULGUR_CHECK(quant.nvfp4, ckpt.dir(), ": tensor '", packed_name,
               "' is packed but config.json declares no compressed-tensors NVFP4 "
               "quantization_config");
  FULGUR_CHECK(shape.size() == 2 && shape[1] % 16 == 0, ckpt.dir(), ": tensor '", packed_name,
               "' stands for ", shape_str(shape), " (", needed_for,
               "), which is not a matrix whose rows fill NVFP4's 16-element groups");
  const int64_t rows = shape[0], cols = shape[1];
  PartSource s;
  s.packed = &packed_part(ckpt, packed_name, SafetensorsDType::kU8, {rows, cols / 2}, name, "NVFP4");
  s.scales = &packed_part(ckpt, base + ".weight_scale", SafetensorsDType::kF8_E4M3,
                          {rows, cols / 16}, name, "NVFP4");
  const std::string global_name = base + ".weight_global_scale";
  const SafetensorsTensor* g = ckpt.find(global_name);
  FULGUR_CHECK(g != nullptr, ckpt.dir(), ": NVFP4 weight '", name, "' has no '", global_name, "'");
  FULGUR_CHECK(g->n_elements() == 1 && is_float(g->dtype), g->file, ": tensor '", global_name,
               "' is ", safetensors_dtype_name(g->dtype), " ", shape_str(g->shape),
               ", expected one float");
  safetensors_to_f32(g->dtype, g->data, 1, &s.global, global_name);
  FULGUR_CHECK(std::isfinite(s.global) && s.global > 0.0f && std::isfinite(1.0f / s.global),
               g->file, ": tensor '", global_name, "' is ", s.global,
               ", expected a positive finite scale");
  used.insert({packed_name, s.scales->name, global_name});
  const std::string input_name = base + ".input_global_scale";  // activation quantization only
  if (ckpt.has(input_name)) used.insert(input_name);
  return s;
}

// Whether every GGUF row of tp is one whole row of an MXFP4 source (see checkpoint_tensor_type).
bool mxfp4_rows(const TensorPlan& tp, const std::vector<PartSource>& sources) {
  if (sources.empty() || !tp.cols.empty() || tp.transform != ValueTransform::kNone || tp.permute_heads > 0) {
    return false;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const TensorPart& p = tp.parts[i];
    const int64_t cols = p.hf_shape.back();
    if (!sources[i].mxfp4() || tp.shape[0] != cols) return false;
    if (p.strided() && (p.col_stride != 1 || p.offset % cols != 0 || p.row_stride % cols != 0)) return false;
  }
  return true;
}

// The first element (row-major over its logical shape) of GGUF row r of tp in its source.
int64_t source_element(const TensorPlan& tp, int64_t r, size_t* part) {
  const UnitSource at = locate_unit(tp, r * (tp.shape[0] / tp.row_len()));
  const TensorPart& p = tp.parts[at.part];
  *part = at.part;
  return p.strided() ? p.offset + at.unit * p.row_stride : at.unit * tp.row_len();
}

// Whether tp is its one NVFP4 source unchanged (see checkpoint_tensor_type), rows aside.
bool nvfp4_whole(const TensorPlan& tp, const std::vector<PartSource>& sources) {
  if (sources.size() != 1 || !sources[0].nvfp4()) return false;
  const TensorPart& p = tp.parts[0];
  return !p.strided() && p.row0 == 0 && (p.n_rows < 0 || p.n_rows == p.hf_shape[0]) &&
         tp.shape == ggml_shape_of(p.hf_shape) && tp.cols.empty() &&
         tp.transform == ValueTransform::kNone;
}

// Emits `rows` rows of out_row bytes each, written by write_row(r, out), in chunks of about 1 MiB.
template <class WriteRow>
void emit_rows(const GgufEmit& emit, int64_t rows, size_t out_row, WriteRow write_row) {
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<uint8_t> chunk(std::max(kChunk, out_row));
  size_t used = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (used + out_row > chunk.size()) {
      emit(chunk.data(), used);
      used = 0;
    }
    write_row(r, chunk.data() + used);
    used += out_row;
  }
  if (used > 0) emit(chunk.data(), used);
}

}  // namespace

int64_t TensorPlan::n_elements() const { return product(shape); }

int64_t TensorPlan::row_len() const {
  return permute_heads > 0 && shape.size() == 1 ? 1 : shape.at(0);
}

TensorPlan same_bytes(std::string hf_name, std::string gguf_name, std::vector<int64_t> hf_shape) {
  std::vector<int64_t> shape = ggml_shape_of(hf_shape);
  return reshaped(std::move(hf_name), std::move(hf_shape), std::move(gguf_name), std::move(shape));
}

TensorPlan reshaped(std::string hf_name, std::vector<int64_t> hf_shape, std::string gguf_name,
                    std::vector<int64_t> ggml_shape) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  tp.shape = std::move(ggml_shape);
  tp.parts.push_back({std::move(hf_name), std::move(hf_shape)});
  return tp;
}

TensorPlan stacked(const std::vector<std::string>& hf_names, const std::vector<int64_t>& hf_shape,
                   std::string gguf_name) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  tp.shape = ggml_shape_of(hf_shape);
  tp.shape.push_back(static_cast<int64_t>(hf_names.size()));
  for (const std::string& name : hf_names) tp.parts.push_back({name, hf_shape});
  return tp;
}

TensorPlan computed_tensor(std::string gguf_name, std::vector<int64_t> shape, std::vector<float> values) {
  TensorPlan tp;
  tp.gguf_name = std::move(gguf_name);
  tp.shape = std::move(shape);
  tp.computed = std::move(values);
  FULGUR_CHECK(static_cast<int64_t>(tp.computed.size()) == tp.n_elements(), tp.gguf_name, ": ",
               tp.computed.size(), " computed values for shape ", shape_str(tp.shape));
  return tp;
}

std::vector<std::string> numbered_names(const std::string& prefix, int64_t n, const std::string& suffix) {
  std::vector<std::string> names;
  for (int64_t j = 0; j < n; ++j) names.push_back(cat(prefix, j, suffix));
  return names;
}

void plan_output_head(ArchPlan& plan, const HfConfig& cfg, const std::set<std::string>& names,
                      int64_t n_vocab, int64_t n_embd) {
  const bool tied = cfg.get_bool("tie_word_embeddings", false);
  const bool has_lm_head = names.count("lm_head.weight") > 0;
  if (has_lm_head && !tied) {
    plan.tensors.push_back(same_bytes("lm_head.weight", "output.weight", {n_vocab, n_embd}));
  } else if (has_lm_head) {
    plan.ignored.insert("lm_head.weight");  // tied: HF ignores it too, token_embd serves
  } else if (!tied) {
    log_warn(cfg.source(), ": tie_word_embeddings is false but the checkpoint has no "
             "lm_head.weight; the GGUF will reuse token_embd as the output projection");
  }
}

UnitSource locate_unit(const TensorPlan& tp, int64_t u) {
  const int64_t units = tp.rows();
  FULGUR_CHECK(u >= 0 && u < units, tp.gguf_name, ": row ", u, " outside its ", units, " rows");
  if (tp.permute_heads > 0) u = permuted_row(u, units, tp.permute_heads);
  for (size_t i = 0; i < tp.parts.size(); ++i) {
    const int64_t n = part_units(tp, tp.parts[i]);
    if (u < n) return {i, tp.parts[i].row0 + u};
    u -= n;
  }
  fail(tp.gguf_name, ": its parts hold fewer than ", units, " rows");
}

void assign_quant_roles(ArchPlan& plan) {
  std::vector<std::string> names;
  for (const TensorPlan& tp : plan.tensors) names.push_back(tp.gguf_name);
  const std::vector<TensorRole> roles = quant_roles(names, plan.n_layer);
  for (size_t i = 0; i < roles.size(); ++i) plan.tensors[i].role = roles[i];
}

std::set<std::string> planning_names(const Checkpoint& ckpt) {
  std::set<std::string> out;
  for (const std::string& name : ckpt.names()) {
    out.insert(name);
    if (name.ends_with(".weight_packed")) out.insert(name.substr(0, name.size() - 7));
    if (name.ends_with(kMxBlocks)) out.insert(name.substr(0, name.size() - 7));
  }
  if (has_weight(ckpt, kNestedLmHead)) out.insert(kLmHead);
  return out;
}

PlanSources check_plan(const ArchPlan& plan, const Checkpoint& ckpt, const std::string& in_dir,
                       const std::string& arch_name, const CheckpointQuant& quant) {
  FULGUR_CHECK(!(has_weight(ckpt, kLmHead) && has_weight(ckpt, kNestedLmHead)), in_dir,
               ": both '", kLmHead, "' and '", kNestedLmHead, "' are present (contradictory)");
  PlanSources sources;
  std::set<std::string> used;
  for (const TensorPlan& tp : plan.tensors) {
    std::vector<PartSource>& srcs = sources.emplace_back();
    if (tp.is_computed()) {  // nothing to find in the checkpoint
      FULGUR_CHECK(tp.parts.empty() && static_cast<int64_t>(tp.computed.size()) == tp.n_elements(),
                   tp.gguf_name, ": a computed tensor of shape ", shape_str(tp.shape), " has ",
                   tp.computed.size(), " values and ", tp.parts.size(), " checkpoint parts");
      check_cols(tp);
      continue;
    }
    const int64_t unit = tp.row_len();
    int64_t total = 0;
    FULGUR_CHECK(tp.permute_heads == 0 || tp.parts.size() == 1, tp.gguf_name,
                 ": a row permutation needs a single source");
    for (const TensorPart& p : tp.parts) {
      const PartSource src = resolve_part(ckpt, p.hf_name, p.hf_shape, quant,
                                          cat(tp.gguf_name, " by ", plan.what), used);
      const SafetensorsTensor& t = src.tensor();
      const int64_t n = product(p.hf_shape);
      if (p.strided()) {
        const int64_t last = p.offset + (p.n_rows - 1) * p.row_stride + (unit - 1) * p.col_stride;
        FULGUR_CHECK(!src.nvfp4() && p.row0 == 0 && p.n_rows >= 0 && p.offset >= 0 && p.row_stride >= 0 &&
                         (p.n_rows == 0 || last < n),
                     t.file, ": tensor '", p.hf_name, "' has ", n, " values; ", tp.gguf_name, " reads ", p.n_rows,
                     " strided rows of ", unit, " up to element ", last);
        // An MXFP4 source is read a run of whole blocks at a time.
        FULGUR_CHECK(!src.mxfp4() || (p.col_stride == 1 && unit % 32 == 0 && p.offset % 32 == 0 &&
                                      p.row_stride % 32 == 0),
                     t.file, ": ", tp.gguf_name, " reads MXFP4 tensor '", t.name,
                     "' by values that are not runs of whole 32-element blocks");
        total += p.n_rows;
        srcs.push_back(src);
        continue;
      }
      FULGUR_CHECK(n % unit == 0, t.file, ": tensor '", p.hf_name, "' has ", n,
                   " values, not whole rows of ", unit, " for ", tp.gguf_name);
      const int64_t rows = part_rows(p, n / unit);
      FULGUR_CHECK(p.row0 >= 0 && rows >= 0 && p.row0 + rows <= n / unit, t.file, ": tensor '",
                   p.hf_name, "' has ", n / unit, " rows of ", unit, "; ", tp.gguf_name,
                   " takes rows [", p.row0, ", ", p.row0 + rows, ")");
      total += rows;
      srcs.push_back(src);
    }
    FULGUR_CHECK(total == tp.rows(), tp.gguf_name, " (shape ", shape_str(tp.shape), ") needs ",
                 tp.rows(), " rows of ", unit, " but its sources hold ", total);
    check_cols(tp);
    if (tp.permute_heads > 0) {
      const int64_t rows = tp.rows();
      FULGUR_CHECK(rows % tp.permute_heads == 0 && (rows / tp.permute_heads) % 2 == 0,
                   srcs[0].tensor().file, ": tensor '", tp.parts[0].hf_name, "' has ", rows,
                   " rows, not ", tp.permute_heads,
                   " heads of an even head size (needed for the RoPE row permutation)");
    }
  }
  for (const std::string& name : ckpt.names()) {
    if (used.count(name) || plan.ignored.count(name)) continue;
    // Rotary tables some old checkpoints store; they are recomputed from rope_theta.
    if (name.ends_with(".rotary_emb.inv_freq")) continue;
    fail(in_dir, ": unexpected tensor '", name, "' for ", arch_name, " (", plan.what, ")");
  }
  return sources;
}

RowReader computed_rows(const TensorPlan& tp) {
  return [&tp](int64_t row0, int64_t n_rows, float* out) {
    const int64_t ne0 = tp.shape[0];
    FULGUR_CHECK(row0 >= 0 && (row0 + n_rows) * ne0 <= static_cast<int64_t>(tp.computed.size()),
                 tp.gguf_name, ": rows [", row0, ", ", row0 + n_rows, ") outside its computed values");
    std::copy_n(tp.computed.begin() + row0 * ne0, n_rows * ne0, out);
  };
}

RowReader checkpoint_rows(const TensorPlan& tp, const std::vector<PartSource>& sources) {
  if (tp.is_computed()) return computed_rows(tp);
  std::vector<std::string> what;  // [part] error-message names of the sources
  for (const PartSource& s : sources) {
    what.push_back(cat(s.tensor().file, ": tensor '", s.tensor().name, "'"));
  }
  return [&tp, &sources, what = std::move(what)](int64_t row0, int64_t n_rows, float* out) {
    const int64_t unit = tp.row_len();
    const int64_t per_row = tp.shape[0] / unit;  // units per GGUF row
    int64_t u = row0 * per_row;
    const int64_t end = (row0 + n_rows) * per_row;
    while (u < end) {
      const UnitSource at = locate_unit(tp, u);
      const PartSource& src = sources[at.part];
      const TensorPart& part = tp.parts[at.part];
      if (part.strided() && src.mxfp4()) {  // one row, a run of whole blocks (check_plan)
        dequantize_mxfp4_checkpoint(src.mx_blocks->data, src.mx_scales->data,
                                    part.offset + at.unit * part.row_stride, unit, out);
        out += unit;
        ++u;
        continue;
      }
      if (part.strided()) {  // one row, gathered value by value
        const SafetensorsTensor& t = *src.floats;
        const size_t elem = static_cast<size_t>(safetensors_dtype_bits(t.dtype) / 8);
        for (int64_t c = 0; c < unit; ++c) {
          const int64_t at_elem = part.offset + at.unit * part.row_stride + c * part.col_stride;
          safetensors_to_f32(t.dtype, t.data + static_cast<size_t>(at_elem) * elem, 1, out + c, what[at.part]);
        }
        out += unit;
        ++u;
        continue;
      }
      // Without a permutation, the units up to the end of this part are contiguous in its source.
      int64_t run = 1;
      if (tp.permute_heads == 0) {
        const TensorPart& p = tp.parts[at.part];
        run = std::min(end - u, p.row0 + part_units(tp, p) - at.unit);
      }
      if (src.nvfp4()) {
        dequantize_nvfp4_checkpoint(src.packed->data, src.scales->data, src.global,
                                    at.unit * unit, run * unit, out, what[at.part]);
      } else if (src.mxfp4()) {
        dequantize_mxfp4_checkpoint(src.mx_blocks->data, src.mx_scales->data, at.unit * unit, run * unit, out);
      } else {
        const SafetensorsTensor& t = *src.floats;
        const size_t elem = static_cast<size_t>(safetensors_dtype_bits(t.dtype) / 8);
        safetensors_to_f32(t.dtype, t.data + static_cast<size_t>(at.unit * unit) * elem,
                           static_cast<size_t>(run * unit), out, what[at.part]);
      }
      out += run * unit;
      u += run;
    }
  };
}

GgufTensorSource stream_tensor(const TensorPlan& tp, DType type, RowReader read,
                               std::function<void()> done, ThreadPool* pool, RowImportance importance) {
  check_cols(tp);
  return [&tp, type, read = std::move(read), done = std::move(done), pool,
          importance = std::move(importance)](const GgufEmit& emit) {
    const int64_t ne0 = tp.shape[0];
    const int64_t rows = tp.n_elements() / ne0;
    const size_t out_row = row_bytes(type, ne0);
    constexpr size_t kChunk = size_t{1} << 20;
    const int64_t chunk_rows = std::min<int64_t>(
        rows, static_cast<int64_t>(std::max<size_t>(
                  1, kChunk / std::max(out_row, static_cast<size_t>(ne0) * sizeof(float)))));
    std::vector<float> values(static_cast<size_t>(chunk_rows * ne0));            // [chunk][ne0] f32
    std::vector<uint8_t> packed(static_cast<size_t>(chunk_rows) * out_row);       // [chunk] rows
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
      const int64_t n = std::min(chunk_rows, rows - r0);
      // Rows [begin, end) of the chunk: read, column order, transform, quantize.
      auto convert_rows = [&](int64_t begin, int64_t end) {
        float* v = values.data() + begin * ne0;
        read(r0 + begin, end - begin, v);
        if (!tp.cols.empty()) {
          std::vector<float> row(static_cast<size_t>(ne0));  // [ne0] before the column order
          for (int64_t r = begin; r < end; ++r) {
            float* x = values.data() + r * ne0;
            std::copy_n(x, ne0, row.data());
            for (int64_t c = 0; c < ne0; ++c) x[c] = row[tp.cols[c]];
          }
        }
        if (tp.transform == ValueTransform::kNegExp) {
          for (int64_t i = 0; i < (end - begin) * ne0; ++i) v[i] = -std::exp(v[i]);
        } else if (tp.transform == ValueTransform::kAddOne) {
          for (int64_t i = 0; i < (end - begin) * ne0; ++i) v[i] = 1.0f + v[i];
        }
        for (int64_t r = begin; r < end; ++r) {
          if (importance) {
            quantize_row_weighted(type, values.data() + r * ne0, packed.data() + r * out_row, ne0,
                                  importance(r0 + r));
          } else {
            quantize_row(type, values.data() + r * ne0, packed.data() + r * out_row, ne0);
          }
        }
      };
      if (pool != nullptr && n > 1) {
        pool->parallel_for(n, [&](int64_t begin, int64_t end, int) { convert_rows(begin, end); });
      } else {
        convert_rows(0, n);
      }
      emit(packed.data(), static_cast<size_t>(n) * out_row);
    }
    if (done) done();
  };
}

DType checkpoint_tensor_type(const TensorPlan& tp, const std::vector<PartSource>& sources,
                             DType chosen, bool keep_nvfp4, bool keep_mxfp4) {
  if (std::any_of(sources.begin(), sources.end(), [](const PartSource& s) { return s.mxfp4(); })) {
    const bool rows = mxfp4_rows(tp, sources);
    if (rows && keep_mxfp4) return DType::kMXFP4;
    log_warn("convert: ", tp.gguf_name, " is written as ", dtype_name(chosen), " from dequantized MXFP4 values: ",
             !keep_mxfp4 ? "the output type asks for it" : "its rows are not whole rows of MXFP4 sources");
    return chosen;
  }
  const bool any_nvfp4 =
      std::any_of(sources.begin(), sources.end(), [](const PartSource& s) { return s.nvfp4(); });
  if (!any_nvfp4) return chosen;
  const bool whole = nvfp4_whole(tp, sources);
  if (whole && keep_nvfp4 && tp.shape[0] % 64 == 0) return DType::kNVFP4;
  log_warn("convert: ", tp.gguf_name, " is written as ", dtype_name(chosen),
           " from dequantized NVFP4 values: ",
           !keep_nvfp4       ? "the runtime reads it as floats"
           : whole           ? "its rows do not fill 64-element GGUF NVFP4 blocks"
                             : "it is not one NVFP4 source taken unchanged");
  return chosen;
}

void add_checkpoint_tensor(GgufWriter& w, const TensorPlan& tp,
                           const std::vector<PartSource>& sources, DType type,
                           std::function<void()> done, ThreadPool* pool) {
  if (type == DType::kMXFP4 && mxfp4_rows(tp, sources)) {
    w.add_tensor_streamed(tp.gguf_name, type, tp.shape, [&tp, &sources, done](const GgufEmit& emit) {
      const int64_t cols = tp.shape[0];
      emit_rows(emit, tp.rows(), row_bytes(DType::kMXFP4, cols), [&](int64_t r, uint8_t* out) {
        size_t part = 0;
        const int64_t row = source_element(tp, r, &part) / cols;  // a whole source row (mxfp4_rows)
        const PartSource& src = sources[part];
        repack_mxfp4_row(src.mx_blocks->data + row * (cols / 2), src.mx_scales->data + row * (cols / 32), cols, out);
      });
      if (done) done();
    });
    return;
  }
  if (type != DType::kNVFP4 || !nvfp4_whole(tp, sources)) {
    w.add_tensor_streamed(tp.gguf_name, type, tp.shape,
                          stream_tensor(tp, type, checkpoint_rows(tp, sources), std::move(done), pool));
    return;
  }
  const PartSource& src = sources[0];
  w.add_tensor_streamed(tp.gguf_name, type, tp.shape, [&tp, &src, done](const GgufEmit& emit) {
    const int64_t cols = tp.shape[0], rows = tp.shape[1];
    const std::string what = cat(src.packed->file, ": tensor '", src.packed->name, "'");
    emit_rows(emit, rows, row_bytes(DType::kNVFP4, cols), [&](int64_t r, uint8_t* out) {
      const int64_t from = tp.permute_heads > 0 ? permuted_row(r, rows, tp.permute_heads) : r;
      repack_nvfp4_row(src.packed->data + from * (cols / 2), src.scales->data + from * (cols / 16), cols, out, what);
    });
    if (done) done();
  });
  const std::string base = weight_base(tp.gguf_name);
  const float scale = 1.0f / src.global;
  w.add_tensor((base.empty() ? tp.gguf_name : base) + ".scale", DType::kF32, {1}, &scale,
               sizeof(scale));
}

bool include_mtp_block(MtpMode mode, const HfConfig& cfg, const std::string& key, int64_t n_declared,
                       bool has_tensors, const std::string& prefix) {
  if (mode == MtpMode::kInclude) {
    FULGUR_CHECK(n_declared > 0, "convert: --mtp: ", cfg.source(), " has no MTP block (", key,
                 " is 0 or absent)");
  } else if (mode == MtpMode::kAuto && n_declared > 0 && !has_tensors) {
    log_warn(cfg.source(), ": ", key, " is ", n_declared, " but the checkpoint has no ", prefix,
             "* tensors; writing no MTP block");
  }
  FULGUR_CHECK(n_declared > 0 || !has_tensors || mode == MtpMode::kExclude, cfg.source(),
               ": the checkpoint has ", prefix, "* tensors but ", key, " is 0 or absent");
  return mode == MtpMode::kInclude || (mode == MtpMode::kAuto && has_tensors);
}

}  // namespace fulgur
