// `fulgur quantize IN.gguf OUT.gguf TYPE [--imatrix FILE] [--pure] [--leave-output-tensor]
// [--output-tensor-type T] [--token-embedding-type T] [--tensor-type PATTERN=T]... [--allow-requantize]
// [-t N]`: llama-quantize for fulgur (the per-tensor options as llama_model_quantize_params
// has them; convert/quant_mix.h QuantOptions says how they combine with the mix).
// TYPE is one of llama.cpp's named mixes (convert/quant_mix.h: Q4_K_M, Q5_K_S, Q6_K, Q8_0,
// IQ4_XS, IQ4_NL, ...); every tensor gets the type llama.cpp's quantizer would give it in that
// mix, and general.file_type / general.quantization_version are set as llama.cpp sets them. The
// rest of the metadata is copied (split keys dropped), tensors stay in the input's order.
//
// A tensor whose chosen type is its type is copied byte for byte; any other is read row by row
// (F32 as is, F16 / BF16 / a quantized type dequantized), quantized by fulgur's reference
// quantizers (tensor/quants.h; the bytes differ from llama.cpp's importance-free search, the
// format does not) in chunks whose rows are split over -t threads (the bytes do not depend on
// the thread count), and streamed into the writer, so memory stays about one chunk per tensor.
// Requantizing (an already quantized tensor to another type) is refused without
// --allow-requantize, as llama-quantize refuses it. Everything is checked before the output is
// opened; the writer writes `OUT.tmp.<pid>` and renames it at the end, so a refused or failed
// run leaves no OUT (and never touches an existing one). OUT may not be IN.
//
// --imatrix FILE: llama.cpp's importance matrix (convert/imatrix.h, GGUF or legacy .dat). As in
// llama-quantize it changes the rules where they test for one (IQ4_NL / IQ4_XS keep the first
// eighth of ffn_down in the mix's type; Q4_0 / Q5_0 give it Q4_1 / Q5_1; IQ3_XXS keeps attn_v
// and ffn_down in IQ3_XXS), and the quantizers weight their searches by it (quantize_row_weighted:
// K-quants, IQ4, the IQ3 / IQ2 codebook types, Q4_0..Q5_1; Q8_0 ignores it, as llama.cpp's
// does). The IQ2 mixes and IQ3_XXS need one, as in llama-quantize. A tensor without an entry is quantized without; an entry
// of the wrong size is an error (the token embedding's is ignored, as llama.cpp does). The
// quantize.imatrix.* keys record the file, its first dataset, its entries and chunks.
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "convert/convert_plan.h"
#include "convert/imatrix.h"
#include "convert/progress.h"
#include "convert/quant_mix.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tensor/quants.h"

namespace fulgur::cli {
namespace {

constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION

struct QuantizeOptions {
  std::string in, out, type, imatrix;
  std::string output_type, token_embedding_type;  // ggml type names; empty: the mix's choice
  std::vector<std::string> tensor_types;          // PATTERN=TYPE
  bool pure = false, leave_output = false;
  bool allow_requantize = false;
  bool no_progress = false;
  int threads = 0;
};

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

void quantize(const QuantizeOptions& o) {
  const QuantMix* mix = find_quant_mix(o.type);
  FULGUR_CHECK(mix != nullptr, "quantize: unknown type '", o.type, "' (expected one of llama.cpp's mixes: ",
               quant_mix_list(), ")");
  FULGUR_CHECK(o.threads >= 0, "quantize: -t must be >= 0, got ", o.threads);
  FULGUR_CHECK(!same_file(o.in, o.out), "quantize: OUT is the input file ", o.in, "; write to another path");
  QuantOptions options;
  options.pure = o.pure;
  options.quantize_output = !o.leave_output;
  if (!o.output_type.empty()) options.output_type = parse_quant_type(o.output_type, "--output-tensor-type");
  if (!o.token_embedding_type.empty()) {
    options.token_embedding_type = parse_quant_type(o.token_embedding_type, "--token-embedding-type");
  }
  for (const std::string& arg : o.tensor_types) options.tensor_types.push_back(parse_tensor_type_option(arg));

  const GgufReader src(o.in);
  const QuantModel model = quant_model_of(src);
  ImportanceMatrix imatrix;
  if (!o.imatrix.empty()) imatrix = read_imatrix(o.imatrix);
  const bool has_imatrix = !imatrix.values.empty();
  std::vector<QuantTensor> qt;
  for (const GgufTensorInfo& t : src.tensors()) {
    QuantTensor q;
    q.name = t.name;
    q.type = t.type;
    std::copy(t.ne, t.ne + 4, q.ne);
    qt.push_back(std::move(q));
  }
  std::vector<int64_t> matched;
  const std::vector<DType> types = quant_types(*mix, model, qt, has_imatrix, options, &matched);
  // llama.cpp applies a pattern where it matches and says nothing of one that never does; a
  // misspelt pattern would then go unnoticed, so fulgur says so (the types are llama.cpp's).
  for (size_t p = 0; p < matched.size(); ++p) {
    if (matched[p] > 0) continue;
    std::fprintf(stderr, "quantize: warning: --tensor-type %s=%s matches no tensor %s\n",
                 options.tensor_types[p].pattern.c_str(), std::string(dtype_name(options.tensor_types[p].type)).c_str(),
                 is_float(mix->default_type) ? cat("(a ", mix->name, " file takes no --tensor-type, as in llama-quantize)").c_str()
                                             : "that the mix quantizes");
  }

  // Every conversion possible before anything is written.
  for (size_t i = 0; i < qt.size(); ++i) {
    const GgufTensorInfo& t = src.tensors()[i];
    if (types[i] == t.type) continue;
    FULGUR_CHECK(is_float(t.type) || o.allow_requantize, src.where(), ": tensor '", t.name, "' is already ",
                 dtype_name(t.type), "; requantizing it to ", dtype_name(types[i]),
                 " loses precision twice (pass --allow-requantize to do it anyway)");
    FULGUR_CHECK(dtype_info(t.type).computable, src.where(), ": tensor '", t.name, "' is ", dtype_name(t.type),
                 ", which fulgur cannot dequantize");
    FULGUR_CHECK(can_quantize(types[i]), "quantize: fulgur has no quantizer for ", dtype_name(types[i]),
                 " (tensor '", t.name, "')");
  }
  for (size_t i = 0; i < qt.size(); ++i) {
    FULGUR_CHECK(has_imatrix || !quant_needs_imatrix(*mix, qt[i].name, types[i]) ||
                     !quant_allows(qt[i], options.quantize_output),
                 "quantize: ", mix->name, " needs an importance matrix (its ", dtype_name(types[i]), " tensors, '",
                 qt[i].name, "' first, are garbage without one, as llama-quantize says); give --imatrix FILE");
  }
  // Each quantized tensor's importance: one vector of ne0 per matrix (per expert of a 3-D one).
  std::vector<const float*> importance(qt.size(), nullptr);
  if (has_imatrix) {
    int missing = 0;
    for (size_t i = 0; i < qt.size(); ++i) {
      const GgufTensorInfo& t = src.tensors()[i];
      if (types[i] == t.type) continue;
      const auto it = imatrix.values.find(t.name);
      if (it == imatrix.values.end()) {
        FULGUR_CHECK(!quant_needs_imatrix(*mix, t.name, types[i]), "quantize: imatrix '", o.imatrix,
                     "' has no entry for '", t.name, "', which ", mix->name, " cannot quantize to ",
                     dtype_name(types[i]), " without one");
        ++missing;
        continue;
      }
      FULGUR_CHECK(t.ne[3] == 1, "quantize: '", t.name, "' is 4-D; an imatrix covers 2-D and 3-D weights");
      const size_t want = static_cast<size_t>(t.ne[0] * t.ne[2]);
      if (it->second.size() == want) {
        importance[i] = it->second.data();
      } else {
        // llama.cpp tolerates this for the token embedding only (it never has activations).
        FULGUR_CHECK(t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight", "quantize: imatrix '",
                     o.imatrix, "' has ", it->second.size(), " values for '", t.name, "', which needs ", want);
      }
    }
    if (missing > 0) {
      std::fprintf(stderr, "quantize: %s has no importance for %d of the quantized tensors; they are quantized "
                   "without it\n", o.imatrix.c_str(), missing);
    }
  }

  GgufWriter w;
  w.copy_metadata(src);
  if (src.has("general.alignment")) w.set_alignment(src.alignment());
  w.set_u32("general.quantization_version", kQuantizationVersion);
  w.set_u32("general.file_type", mix->file_type);
  for (const char* k : {"split.no", "split.count", "split.tensors.count"}) w.remove(k);
  if (has_imatrix) {  // as llama-quantize records it
    w.set_string("quantize.imatrix.file", o.imatrix);
    if (!imatrix.datasets.empty()) w.set_string("quantize.imatrix.dataset", imatrix.datasets[0]);
    w.set_u32("quantize.imatrix.entries_count", static_cast<uint32_t>(imatrix.values.size()));
    if (imatrix.chunk_count > 0) w.set_u32("quantize.imatrix.chunks_count", static_cast<uint32_t>(imatrix.chunk_count));
  }

  Progress progress;
  progress.label = "quantize";
  progress.on = !o.no_progress && isatty(STDERR_FILENO);
  progress.n_tensors = src.tensors().size();
  ThreadPool pool(o.threads);
  std::deque<TensorPlan> plans;  // stream_tensor keeps a reference until write() ends
  uint64_t bytes_in = 0, bytes_out = 0;
  std::map<DType, int> counts;
  for (size_t i = 0; i < qt.size(); ++i) {
    const GgufTensorInfo& t = src.tensors()[i];
    const DType type = types[i];
    const std::vector<int64_t> shape = t.shape();
    const uint64_t nbytes = GgufWriter::tensor_nbytes(type, shape);
    progress.total += nbytes;
    bytes_in += t.nbytes;
    bytes_out += nbytes;
    ++counts[type];
    if (type == t.type) {
      w.add_tensor_streamed(t.name, type, shape, [&t, nbytes, &progress](const GgufEmit& emit) {
        emit(t.data, t.nbytes);
        progress.tensor_done(nbytes);
      });
      continue;
    }
    TensorPlan& tp = plans.emplace_back();
    tp.gguf_name = t.name;
    tp.shape = shape;
    const size_t in_row = row_bytes(t.type, t.ne[0]);
    RowReader read = [&t, in_row](int64_t row0, int64_t n_rows, float* out) {
      for (int64_t r = 0; r < n_rows; ++r) {
        dequantize_row(t.type, t.data + static_cast<size_t>(row0 + r) * in_row, out + r * t.ne[0], t.ne[0]);
      }
    };
    RowImportance rows_importance;
    if (importance[i] != nullptr) {
      rows_importance = [imp = importance[i], &t](int64_t row) { return imp + (row / t.ne[1]) * t.ne[0]; };
    }
    w.add_tensor_streamed(t.name, type, shape,
                          stream_tensor(tp, type, std::move(read), [&progress, nbytes] { progress.tensor_done(nbytes); },
                                        &pool, std::move(rows_importance)));
  }
  try {
    w.write(o.out);
  } catch (...) {
    progress.abandon();
    throw;
  }
  std::string summary;
  for (const auto& [type, n] : counts) summary += cat(summary.empty() ? "" : ", ", dtype_name(type), " x", n);
  std::fprintf(stderr, "quantize: wrote %s (%s of %s %s: %.2f MB -> %.2f MB; tensors %s)\n", o.out.c_str(),
               std::string(mix->name).c_str(), model.arch.c_str(), o.in.c_str(), bytes_in / 1e6, bytes_out / 1e6,
               summary.c_str());
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "llama-quantize for fulgur: rewrite a GGUF in one of llama.cpp's quantization mixes (Q4_K_M, Q6_K, IQ4_XS, "
      "...), each tensor of the type llama.cpp's quantizer gives it (archs qwen3, qwen3moe, qwen2, llama)");
  cmd->add_option("IN", o->in, "the GGUF to quantize (F32/F16/BF16 weights; a quantized tensor whose type would change needs "
                 "--allow-requantize)")
      ->required();
  cmd->add_option("OUT", o->out, "the GGUF to write (not IN; written to OUT.tmp.<pid>, renamed when complete)")
      ->required();
  cmd->add_option("TYPE", o->type, "the mix: " + quant_mix_list() + " (case-insensitive)")->required();
  cmd->add_option("--imatrix", o->imatrix,
                  "llama.cpp's importance matrix (GGUF or legacy .dat from llama-imatrix): it weights the scale "
                  "searches (K-quants, IQ4, Q4_0..Q5_1; not Q8_0) and, as in llama-quantize, changes the IQ4 / "
                  "Q4_0 / Q5_0 ffn_down rules; Q2_K_S requires it");
  cmd->add_flag("--pure", o->pure,
                "every quantized tensor gets the mix's type: none of the mix's per-tensor upgrades (the head's Q6_K, "
                "attn_v / ffn_down's more bits, ...); rows its block does not divide still fall back");
  cmd->add_flag("--leave-output-tensor", o->leave_output, "leave output.weight as it is in IN (not quantized)");
  cmd->add_option("--output-tensor-type", o->output_type,
                  "ggml type for output.weight (f16, q8_0, q6_K, ...), taken as is: its block must divide the rows; "
                  "with tied embeddings (no output.weight) it is token_embd's type unless --pure");
  cmd->add_option("--token-embedding-type", o->token_embedding_type,
                  "ggml type for token_embd.weight (and per_layer_token_embd), taken as is: its block must divide "
                  "the rows");
  cmd->add_option("--tensor-type", o->tensor_types,
                  "PATTERN=TYPE, repeatable: tensors whose name the regular expression PATTERN (lowercased, matched "
                  "anywhere in the name; the first that matches wins) get TYPE instead of the mix's rules, falling "
                  "back as they do where TYPE's block does not divide the rows; ignored by the F32 / F16 / BF16 "
                  "mixes, as in llama-quantize; a pattern that matches nothing is warned about")
      ->allow_extra_args(false);  // one PATTERN=TYPE per --tensor-type: IN OUT TYPE may follow
  cmd->add_flag("--allow-requantize", o->allow_requantize,
                "allow tensors that are already quantized to be dequantized and quantized again to another type");
  cmd->add_option("-t,--threads", o->threads, "threads quantizing rows (0 = one per physical core)")
      ->capture_default_str();
  cmd->add_flag("--no-progress", o->no_progress, "no progress bar on stderr (there is none when it is not a terminal)");
  cmd->callback([o, &exit_code] {
    quantize(*o);
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
