// What an architecture converter decides before a byte is written: the GGUF keys (set on the
// writer), the list of GGUF tensors with where each one's values come from, and the checkpoint
// tensors it drops on purpose. The driver (convert_model.cpp) checks the plan against the
// checkpoint, so an inconsistent config or checkpoint fails before any output exists; `fulgur
// synth` runs the same plans on a generated config, so synthetic models and converted ones are
// built by one code path.
//
// How a GGUF tensor is assembled from checkpoint tensors:
//   - A GGUF tensor of ggml shape {ne0, ne1, ...} is a sequence of rows of ne0 values. It is the
//     concatenation, in order, of its parts; a part is a run of consecutive rows of one checkpoint
//     tensor, whose row-major elements are read as rows of the GGUF tensor's ne0 (whatever the
//     source's own shape). So:
//   - a plain tensor is one part covering its whole source, and its ggml shape is the HF shape
//     reversed (same bytes): HF linear [out, in] -> {in, out} (same_bytes());
//   - a reshape that keeps the element order costs nothing: Nemotron-H A_log [Hs] -> ssm_a
//     {1, Hs} (rows of one value), norm [Di] -> ssm_norm {Di/G, G}, conv1d [C, 1, K] -> {K, C}
//     (reshaped());
//   - stacked experts: blk.N.ffn_up_exps {E, F, n_expert} has n_expert parts, part j being the
//     whole of HF mlp.experts.j.up_proj.weight [F, E] (stacked());
//   - a slice: {hf_name, row0, n_rows} takes source rows [row0, row0 + n_rows) (in rows of the
//     GGUF ne0). Fused HF experts gate_up_proj [n_expert, 2F, E] give ffn_gate_exps the parts
//     (j*2F, F) and ffn_up_exps the parts (j*2F + F, F); one source may feed several tensors,
//     and a regrouping (Qwen3-Next's per-head qkvz) is a list of such slices.
//   - a reorder of rows is a list of slices too: Qwen3.5's tiled V heads are one part per head;
//   - `cols` reorders the values inside every row (Qwen3.5's out_proj columns by V head; a 1-D
//     tensor is one row, so its values): GGUF value c of a row is value cols[c] of that row as the
//     parts give it;
//   - a strided part (TensorPart::strided) gathers each row from a column of its source, for
//     sources stored [in, out] (gpt-oss's experts) or interleaved (their gate and up columns);
//   - a computed tensor has no parts: its values come from the config, not the checkpoint
//     (`computed`, in GGUF order): Gemma 4's rope_freqs, whose factors make RoPE rotate only
//     some pairs ("proportional" RoPE), or llama3's frequency-scaled rope_freqs;
//   - `transform` maps each value (ValueTransform::kNegExp: A_log -> -exp(A_log) for ssm_a;
//     kAddOne: a zero-centred norm gain w -> 1 + w);
//     `permute_heads` reorders the rows of a single-part tensor (llama q/k RoPE layout).
// Values flow source dtype -> f32 -> column order -> transform -> target type, a chunk of rows at a time
// (stream_tensor), so memory stays bounded by about 1 MiB whatever the tensor's size: a 3-D
// expert tensor of several GB is read expert by expert, and quantized row by row like any matrix
// (ggml and llama-quantize treat a tensor as ne1*ne2*ne3 independent rows of ne0 values, so each
// expert's slice is an ordinary matrix whose rows are quantized independently). An NVFP4 linear
// of a compressed-tensors checkpoint that a tensor takes whole and unchanged skips the floats:
// its codes and block scales are repacked into ggml NVFP4 blocks (add_checkpoint_tensor), and so
// are the rows of an MXFP4 weight (OpenAI's X_blocks / X_scales) into ggml MXFP4 blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "convert/nvfp4_checkpoint.h"
#include "convert/quant_policy.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

namespace fulgur {

class Checkpoint;
class HfConfig;
class ThreadPool;
struct SafetensorsTensor;

enum class ValueTransform : uint8_t {
  kNone,
  kNegExp,  // v -> -exp(v): Mamba2 / Gated DeltaNet A_log -> A (ssm_a)
  kAddOne,  // v -> 1 + v: Qwen3-Next / Qwen3.5 norms, which HF applies as norm(x) * (1 + w)
};

// Whether the MTP (multi-token prediction) block of a checkpoint goes into the GGUF.
enum class MtpMode : uint8_t {
  kAuto,     // when the checkpoint has one (the default)
  kInclude,  // --mtp: required; an error when the architecture or the checkpoint has none
  kExclude,  // --no-mtp: left out
};

class HfConfig;

// Whether a conversion writes the checkpoint's MTP block, for every arch that has one. The
// config declares `n_declared` blocks in its field `key`; `has_tensors`: the checkpoint holds
// tensors under `prefix`. kInclude needs a declared block, and tensors without a declared block
// are refused unless excluded; kAuto includes the block when its tensors are there (a warning
// when declared but absent).
bool include_mtp_block(MtpMode mode, const HfConfig& cfg, const std::string& key, int64_t n_declared,
                       bool has_tensors, const std::string& prefix);

// A run of rows of one checkpoint tensor.
struct TensorPart {
  std::string hf_name;
  std::vector<int64_t> hf_shape;  // the whole source tensor's expected shape (HF order)
  int64_t row0 = 0;               // first row taken, in rows of the tensor's row_len()
  int64_t n_rows = -1;            // rows taken; -1 = every row from row0 on
  // A strided read (col_stride > 0): the part's row i < n_rows (which must be given; row0 is 0)
  // is the source's flat elements offset + i * row_stride + c * col_stride, c < row_len(). It
  // reads a source stored transposed, or interleaved: transformers' gpt-oss experts
  // gate_up_proj [N, E, 2F] (gate and up alternate by column) and down_proj [N, F, E].
  int64_t offset = 0, row_stride = 0, col_stride = 0;

  bool strided() const { return col_stride > 0; }
};

struct TensorPlan {
  std::string gguf_name;          // blk.N.attn_q.weight, ...
  std::vector<int64_t> shape;     // ggml order (ne0 first)
  std::vector<TensorPart> parts;  // concatenated in order; together exactly rows() rows
  // Quantization role; quant_roles() fills it for a whole plan (it depends on the other tensors).
  TensorRole role = TensorRole::kWeight;
  ValueTransform transform = ValueTransform::kNone;
  // Non-empty: GGUF value c of every row is value cols[c] of the row the parts give (ne0 entries).
  std::vector<int64_t> cols;
  // > 0: reorder rows from HF's rotate-half (NeoX) layout to ggml's interleaved RoPE layout,
  // with this many heads (llama arch q/k projections and their biases; single part only).
  int64_t permute_heads = 0;
  // Non-empty: the n_elements() values of a computed tensor (GGUF order, before the column order
  // and transform); `parts` is then empty, and the checkpoint is not read for it.
  std::vector<float> computed;

  bool is_computed() const { return !computed.empty(); }
  int64_t n_elements() const;
  // The unit rows are counted in: ne0, except for a permuted 1-D tensor (a bias), whose
  // elements are what the permutation moves.
  int64_t row_len() const;
  int64_t rows() const { return n_elements() / row_len(); }
};

struct ArchPlan {
  std::string gguf_arch;                   // general.architecture
  std::vector<TensorPlan> tensors;         // in GGUF order
  std::set<std::string> ignored;           // checkpoint tensors dropped on purpose
  int64_t n_layer = 0;                     // block_count (for the quantization roles)
  int64_t n_vocab = 0;                     // embedding rows; the tokenizer is padded to it
  std::string what;                        // "config.json (hidden_size 64 ...)" for messages
};

// GGUF shape (ggml order) of an HF row-major shape: the same bytes, dims reversed.
inline std::vector<int64_t> ggml_shape_of(const std::vector<int64_t>& hf_shape) {
  return {hf_shape.rbegin(), hf_shape.rend()};
}

// One whole source tensor, same bytes: ggml shape = hf_shape reversed.
TensorPlan same_bytes(std::string hf_name, std::string gguf_name, std::vector<int64_t> hf_shape);
// One whole source tensor under another shape with the same element count and order.
TensorPlan reshaped(std::string hf_name, std::vector<int64_t> hf_shape, std::string gguf_name,
                    std::vector<int64_t> ggml_shape);
// Whole source tensors of one shape stacked along a new outermost dim:
// ggml shape = {hf_shape reversed..., hf_names.size()}.
TensorPlan stacked(const std::vector<std::string>& hf_names, const std::vector<int64_t>& hf_shape,
                   std::string gguf_name);

// A computed tensor of ggml shape `shape` holding `values` (as many as the shape has elements).
TensorPlan computed_tensor(std::string gguf_name, std::vector<int64_t> shape, std::vector<float> values);

// {prefix}0{suffix}, {prefix}1{suffix}, ... (per-expert checkpoint names).
std::vector<std::string> numbered_names(const std::string& prefix, int64_t n, const std::string& suffix);

// The LM head: lm_head.weight [n_vocab, n_embd] -> output.weight when the checkpoint has it and
// tie_word_embeddings is false; a tied head's lm_head.weight is ignored (token_embd serves, as
// in HF); an untied config without one warns and reuses token_embd, as llama.cpp does.
void plan_output_head(ArchPlan& plan, const HfConfig& cfg, const std::set<std::string>& names,
                      int64_t n_vocab, int64_t n_embd);

// Where unit `u` (in row_len() units) of tp comes from: part index and unit within that part's
// source. Throws fulgur::Error when u is past the tensor.
struct UnitSource {
  size_t part;
  int64_t unit;
};
UnitSource locate_unit(const TensorPlan& tp, int64_t u);

// Fills the quantization roles of a finished plan (llama.cpp's rules, quant_policy.h).
void assign_quant_roles(ArchPlan& plan);

// The checkpoint's tensor names as planners should see them: each compressed-tensors NVFP4
// linear (X.weight_packed, ...) also as the X.weight it stands for, each MXFP4 weight (X_blocks,
// X_scales) also as the X it stands for, and model.lm_head.weight
// (as some exports nest it) also as lm_head.weight. check_plan resolves them back.
std::set<std::string> planning_names(const Checkpoint& ckpt);

// Where one part's values are in the checkpoint: a float tensor, the parts of a
// compressed-tensors NVFP4 linear (convert/nvfp4_checkpoint.h) standing for the planned X.weight,
// or the X_blocks / X_scales pair of an MXFP4 weight (convert/mxfp4_checkpoint.h) standing for
// the planned X.
struct PartSource {
  const SafetensorsTensor* floats = nullptr;
  const SafetensorsTensor* packed = nullptr;     // [rows][cols/2] U8 E2M1 code pairs
  const SafetensorsTensor* scales = nullptr;     // [rows][cols/16] F8_E4M3 block scales
  float global = 1.0f;                           // weight_global_scale
  const SafetensorsTensor* mx_blocks = nullptr;  // [..., cols/32, 16] U8 E2M1 code pairs
  const SafetensorsTensor* mx_scales = nullptr;  // [..., cols/32] U8 E8M0 block exponents
  bool nvfp4() const { return packed != nullptr; }
  bool mxfp4() const { return mx_blocks != nullptr; }
  const SafetensorsTensor& tensor() const {
    return floats != nullptr ? *floats : packed != nullptr ? *packed : *mx_blocks;
  }
};

// The checkpoint tensors behind each part, after checking everything the plan expects of the
// checkpoint: every part's source present with the planned shape and a float dtype (or, when
// `quant` allows it, as NVFP4 parts), its elements whole rows of the GGUF row length and its row
// range inside the source, the parts adding up to the tensor, and no checkpoint tensor left
// unused (except plan.ignored and rotary tables). Throws fulgur::Error naming the tensor, file
// and shapes.
using PlanSources = std::vector<std::vector<PartSource>>;  // [tensor][part]
PlanSources check_plan(const ArchPlan& plan, const Checkpoint& ckpt, const std::string& in_dir,
                       const std::string& arch_name, const CheckpointQuant& quant = {});

// Reads GGUF rows [row0, row0 + n_rows) of tp (ne0 values each, as the parts give them: before the
// column order and the transform) into out. Called from several threads at once on disjoint rows,
// so it must not keep state.
using RowReader = std::function<void(int64_t row0, int64_t n_rows, float* out)>;
// The reader of a computed tensor's values.
RowReader computed_rows(const TensorPlan& tp);
// The reader of a checked plan tensor from its checkpoint sources (computed_rows for a computed
// tensor, whose sources are empty).
// NVFP4 parts are dequantized by the format's definition.
RowReader checkpoint_rows(const TensorPlan& tp, const std::vector<PartSource>& sources);

// The GGUF byte stream of tp in `type`: rows from `read`, column order, transform, quantize, in
// chunks of about 1 MiB, each chunk's rows split over `pool`'s threads (nullptr: the calling
// thread; the bytes are the same either way, rows being independent); `done` (may be empty) is
// called after the last byte.
// `importance` (may be empty): the importance of row r's columns (ne0 values, or null for none),
// passed to quantize_row_weighted (llama.cpp's imatrix; `fulgur quantize --imatrix`).
using RowImportance = std::function<const float*(int64_t row)>;
GgufTensorSource stream_tensor(const TensorPlan& tp, DType type, RowReader read,
                               std::function<void()> done = {}, ThreadPool* pool = nullptr,
                               RowImportance importance = {});

// The GGUF type of a checked plan tensor: NVFP4 when its one source is an NVFP4 linear that it
// carries unchanged (the whole source, same layout, no column order or transform, rows filling
// 64-element blocks) and `keep_nvfp4`, so codes and scales are copied bit for bit; MXFP4 when
// every part is an MXFP4 source whose GGUF rows are whole source rows (a run of them, or every
// k-th: gpt-oss's gate / up rows; no column order, transform or permutation) and `keep_mxfp4`;
// `chosen` otherwise (NVFP4 / MXFP4 sources are then dequantized, with a warning naming the
// tensor and why).
DType checkpoint_tensor_type(const TensorPlan& tp, const std::vector<PartSource>& sources,
                             DType chosen, bool keep_nvfp4 = true, bool keep_mxfp4 = true);

// Adds a checked plan tensor of `type` (checkpoint_tensor_type) to w: an NVFP4 one repacked into
// ggml blocks with its `.scale` sidecar (1 / weight_global_scale, the name llama.cpp's converter
// gives it: blk.0.attn_q.weight -> blk.0.attn_q.scale), an MXFP4 one repacked row by row into
// ggml blocks, any other streamed by stream_tensor.
void add_checkpoint_tensor(GgufWriter& w, const TensorPlan& tp,
                           const std::vector<PartSource>& sources, DType type,
                           std::function<void()> done = {}, ThreadPool* pool = nullptr);

}  // namespace fulgur
