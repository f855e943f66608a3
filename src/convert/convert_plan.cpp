#include "convert/convert_plan.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "convert/hf_config.h"
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

PlanSources check_plan(const ArchPlan& plan, const Checkpoint& ckpt, const std::string& in_dir,
                       const std::string& arch_name) {
  PlanSources sources;
  std::set<std::string> used;
  for (const TensorPlan& tp : plan.tensors) {
    std::vector<const SafetensorsTensor*>& srcs = sources.emplace_back();
    const int64_t unit = tp.row_len();
    int64_t total = 0;
    FULGUR_CHECK(tp.permute_heads == 0 || tp.parts.size() == 1, tp.gguf_name,
                 ": a row permutation needs a single source");
    for (const TensorPart& p : tp.parts) {
      const SafetensorsTensor* t = ckpt.find(p.hf_name);
      FULGUR_CHECK(t != nullptr, in_dir, ": missing tensor '", p.hf_name, "' (needed for ",
                   tp.gguf_name, " by ", plan.what, ")");
      FULGUR_CHECK(t->shape == p.hf_shape, t->file, ": tensor '", p.hf_name, "' has shape ",
                   shape_str(t->shape), " but ", plan.what, " implies ", shape_str(p.hf_shape),
                   " (for ", tp.gguf_name, ")");
      const SafetensorsDType dt = t->dtype;
      FULGUR_CHECK(dt == SafetensorsDType::kF32 || dt == SafetensorsDType::kF16 ||
                       dt == SafetensorsDType::kBF16 || dt == SafetensorsDType::kF64,
                   t->file, ": tensor '", p.hf_name, "' has dtype ", safetensors_dtype_name(dt),
                   "; expected F32, F16, BF16 or F64");
      const int64_t n = t->n_elements();
      FULGUR_CHECK(n % unit == 0, t->file, ": tensor '", p.hf_name, "' has ", n,
                   " values, not whole rows of ", unit, " for ", tp.gguf_name);
      const int64_t rows = part_rows(p, n / unit);
      FULGUR_CHECK(p.row0 >= 0 && rows >= 0 && p.row0 + rows <= n / unit, t->file, ": tensor '",
                   p.hf_name, "' has ", n / unit, " rows of ", unit, "; ", tp.gguf_name,
                   " takes rows [", p.row0, ", ", p.row0 + rows, ")");
      total += rows;
      srcs.push_back(t);
      used.insert(p.hf_name);
    }
    FULGUR_CHECK(total == tp.rows(), tp.gguf_name, " (shape ", shape_str(tp.shape), ") needs ",
                 tp.rows(), " rows of ", unit, " but its sources hold ", total);
    check_cols(tp);
    if (tp.permute_heads > 0) {
      const int64_t rows = tp.rows();
      FULGUR_CHECK(rows % tp.permute_heads == 0 && (rows / tp.permute_heads) % 2 == 0,
                   srcs[0]->file, ": tensor '", tp.parts[0].hf_name, "' has ", rows, " rows, not ",
                   tp.permute_heads, " heads of an even head size (needed for the RoPE row permutation)");
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

RowReader checkpoint_rows(const TensorPlan& tp, const std::vector<const SafetensorsTensor*>& sources) {
  std::vector<std::string> what;  // [part] error-message names of the sources
  for (const SafetensorsTensor* t : sources) what.push_back(cat(t->file, ": tensor '", t->name, "'"));
  return [&tp, &sources, what = std::move(what)](int64_t row0, int64_t n_rows, float* out) {
    const int64_t unit = tp.row_len();
    const int64_t per_row = tp.shape[0] / unit;  // units per GGUF row
    int64_t u = row0 * per_row;
    const int64_t end = (row0 + n_rows) * per_row;
    while (u < end) {
      const UnitSource at = locate_unit(tp, u);
      const SafetensorsTensor& t = *sources[at.part];
      // Without a permutation, the units up to the end of this part are contiguous in its source.
      int64_t run = 1;
      if (tp.permute_heads == 0) {
        const TensorPart& p = tp.parts[at.part];
        run = std::min(end - u, p.row0 + part_units(tp, p) - at.unit);
      }
      const size_t elem = static_cast<size_t>(safetensors_dtype_bits(t.dtype) / 8);
      safetensors_to_f32(t.dtype, t.data + static_cast<size_t>(at.unit * unit) * elem,
                         static_cast<size_t>(run * unit), out, what[at.part]);
      out += run * unit;
      u += run;
    }
  };
}

GgufTensorSource stream_tensor(const TensorPlan& tp, DType type, RowReader read,
                               std::function<void()> done, ThreadPool* pool) {
  check_cols(tp);
  return [&tp, type, read = std::move(read), done = std::move(done), pool](const GgufEmit& emit) {
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
          quantize_row(type, values.data() + r * ne0, packed.data() + r * out_row, ne0);
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

}  // namespace fulgur
