// `fulgur standin -m SRC.gguf --size 0.6b|1.7b|4b [--type T] -o OUT.gguf`: a copy of a trained
// model that computes exactly the same function but reads as many weight bytes per decoded token
// as Qwen3-0.6B / 1.7B / 4B, so timings of a small trained model (its drafts, its acceptance)
// can be taken at the memory traffic of a real one.
//
// The rule: every block's SwiGLU FFN (the MTP block's too) is widened by the same X units, X a
// multiple of 256 (a K-quant super-block, 8 Q8_0 blocks), so {arch}.feed_forward_length stays
// one value for all blocks (every entry grows by X when it is an array) and llama.cpp reads the
// file as it reads the source. ffn_gate and ffn_up get X more rows of seeded random values in
// [-0.05, 0.05], quantized to the tensor's own type; each of ffn_down's rows gets X more values
// that are all zero bytes, whole blocks appended after the row's own blocks, which stay byte for
// byte. A zero-byte block is 0.0 in every ggml type (checked here by dequantizing one), the extra
// activations silu(g) * u are finite (g, u are dot products of bounded weights with a normed
// row), and 0 * finite adds 0, so the FFN's output, and the model's, is the source's. Nothing is
// added or moved elsewhere: layer indices (a DSpark draft's taps), the attention, the embeddings
// and the head are the source's.
//
// X is chosen so that the stand-in's Model::bytes_per_token (every matrix of the trunk once, the
// output head, one embedding row, in the file's types) comes nearest the target: the same sum
// over Qwen3's shape of that size (synth_configs.cpp's 0.6b / 1.7b / 4b: the converter's plan for
// that config.json, vocabulary 151,936, tied head) with every tensor typed as `fulgur convert
// --type T` would type it (T = --type, default the source's ffn_gate type). --type only names
// the target; the source's tensors are never converted, and the padding always takes the type of
// the tensor it extends. Everything is checked before the output is opened, and the writer
// writes a temporary file renamed at the end: a refused or failed stand-in leaves no file.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/command.h"
#include "convert/convert_model.h"
#include "convert/progress.h"
#include "convert/quant_policy.h"
#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "synth/random.h"
#include "synth/synth_configs.h"
#include "tensor/quants.h"
#include "tokenizer/builtin_vocab.h"

namespace fulgur::cli {
namespace {

constexpr int64_t kUnit = 256;             // the widening is a multiple of this
constexpr int64_t kQwen3Vocab = 151936;    // Qwen3's embedding rows (config.json vocab_size)
constexpr int64_t kPoolRows = 512;         // distinct random gate/up rows, repeated over the X rows
constexpr float kPadSpread = 0.05f;        // gate/up padding values in [-spread, spread]
const std::vector<std::string> kSizes = {"0.6b", "1.7b", "4b"};
// Archs whose every block holds one dense SwiGLU FFN (ffn_gate, ffn_up, ffn_down).
const std::set<std::string> kArchs = {"qwen3", "qwen2", "llama", "qwen35"};

struct StandinOptions {
  std::string src, out, size, type;
  uint64_t size_bytes = 0;  // hidden, for tests: the target in bytes instead of --size
  uint64_t seed = 1;
  bool no_progress = false;
};

// Bytes per decoded token of Qwen3 at `shape` with tensors typed as `fulgur convert --type type`
// types them, counted as Model::bytes_per_token counts them.
uint64_t qwen3_bytes_per_token(const std::string& shape, DType type) {
  const nlohmann::json config = synth_config("qwen3", shape, kQwen3Vocab, builtin_byte_vocab());
  GgufWriter keys;  // the plan writes its keys here; only the tensors are wanted
  keys.set_string("general.architecture", "qwen3");
  const ArchPlan plan = plan_hf_model(HfConfig(config, "Qwen3 " + shape), {}, keys);
  bool tied = true;
  for (const TensorPlan& tp : plan.tensors) tied = tied && tp.gguf_name != "output.weight";
  uint64_t bytes = 0;
  for (const TensorPlan& tp : plan.tensors) {
    if (tp.shape.size() < 2) continue;
    const DType t = choose_tensor_type(type, tp.role, tp.shape);
    if (tp.gguf_name == "token_embd.weight") {
      bytes += row_bytes(t, tp.shape[0]);  // one row fetched
      if (!tied) continue;                 // else it is the head too
    }
    bytes += GgufWriter::tensor_nbytes(t, tp.shape);
  }
  return bytes;
}

// The FFN of one block.
struct Ffn {
  const GgufTensorInfo* gate = nullptr;  // {E, F}
  const GgufTensorInfo* up = nullptr;    // {E, F}
  const GgufTensorInfo* down = nullptr;  // {F, E}
};

// Every block's FFN, checked: the three tensors present, shapes {E, F} / {E, F} / {F, E} with F
// the block's feed_forward_length, and types whose zero bytes are zeros and whose rows X more
// units keep whole.
std::vector<Ffn> find_ffns(const GgufReader& r, const std::string& arch) {
  const int64_t n_block = r.get_i64(arch + ".block_count");
  const int64_t n_embd = r.get_i64(arch + ".embedding_length");
  const std::string ff_key = arch + ".feed_forward_length";
  const GgufValue& ff = r.get(ff_key);
  FULGUR_CHECK(!ff.is_array() || ff.size() == static_cast<size_t>(n_block), r.what(ff_key), " has ", ff.size(),
               " entries for ", n_block, " blocks");
  std::vector<Ffn> out;
  for (int64_t b = 0; b < n_block; ++b) {
    const std::string p = cat("blk.", b, ".");
    FULGUR_CHECK(r.find_tensor(p + "ffn_gate_inp.weight") == nullptr, r.where(), ": block ", b,
                 " is a mixture of experts; a stand-in widens dense FFNs only");
    const int64_t n_ff = (ff.is_array() ? ff.element(static_cast<size_t>(b)) : ff).get_int<int64_t>(r.what(ff_key));
    Ffn f{r.find_tensor(p + "ffn_gate.weight"), r.find_tensor(p + "ffn_up.weight"), r.find_tensor(p + "ffn_down.weight")};
    for (const GgufTensorInfo* t : {f.gate, f.up, f.down}) {
      FULGUR_CHECK(t != nullptr, r.where(), ": block ", b, " has no dense SwiGLU FFN (",
                   p, "ffn_gate/ffn_up/ffn_down.weight); a stand-in widens every block's FFN");
      const bool down = t == f.down;
      const int64_t want0 = down ? n_ff : n_embd, want1 = down ? n_embd : n_ff;
      FULGUR_CHECK(t->n_dims == 2 && t->ne[0] == want0 && t->ne[1] == want1, r.where(), ": tensor '", t->name,
                   "' has shape [", t->ne[0], ", ", t->ne[1], "], expected [", want0, ", ", want1, "] (",
                   ff_key, " ", n_ff, ")");
      const DTypeInfo& info = dtype_info(t->type);
      FULGUR_CHECK(kUnit % info.block_size == 0, r.where(), ": tensor '", t->name, "' is ", info.name,
                   ", whose blocks of ", info.block_size, " a widening by multiples of ", kUnit, " cannot keep whole");
    }
    FULGUR_CHECK(can_quantize(f.gate->type) && can_quantize(f.up->type), r.where(), ": block ", b,
                 "'s ffn_gate/ffn_up are ", dtype_name(f.gate->type), "/", dtype_name(f.up->type),
                 ", which fulgur cannot write");
    // Zero bytes must read as 0.0 in ffn_down's type.
    const DTypeInfo& d = dtype_info(f.down->type);
    const std::vector<uint8_t> zeros(static_cast<size_t>(d.type_size));
    std::vector<float> values(static_cast<size_t>(d.block_size), 1.0f);
    dequantize_row(f.down->type, zeros.data(), values.data(), d.block_size);
    for (float v : values) {
      FULGUR_CHECK(v == 0.0f, r.where(), ": a zero ", d.name, " block of '", f.down->name, "' is not 0.0");
    }
    out.push_back(f);
  }
  return out;
}

// `v` (an integer scalar or array) with `extra` added to every entry, in the same GGUF type.
GgufValue widened(const GgufValue& v, int64_t extra, const std::string& what) {
  const size_t size = gguf_scalar_size(v.element_type());
  std::vector<uint8_t> raw;
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t n = (v.is_array() ? v.element(i) : v).get_int<int64_t>(what) + extra;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&n);  // little-endian host (gguf_value.h)
    raw.insert(raw.end(), p, p + size);
  }
  const GgufValue out = GgufValue::raw_array(v.element_type(), v.size(), std::move(raw));
  const GgufValue result = v.is_array() ? out : out.element(0);
  for (size_t i = 0; i < v.size(); ++i) {  // the widened value fits the key's type
    FULGUR_CHECK((v.is_array() ? result.element(i) : result).get_int<int64_t>(what) ==
                     (v.is_array() ? v.element(i) : v).get_int<int64_t>(what) + extra,
                 what, ": ", extra, " more units overflow its ", v.type_name());
  }
  return result;
}

// kPoolRows rows of `n` random values in [-kPadSpread, kPadSpread] quantized to `type`, seeded by
// the seed and the tensor's name.
std::vector<uint8_t> padding_rows(DType type, int64_t n, uint64_t seed, const std::string& name) {
  uint64_t state = seed ^ synth::name_hash(name);
  std::vector<float> row(static_cast<size_t>(n));
  const size_t rb = row_bytes(type, n);
  std::vector<uint8_t> out(rb * kPoolRows);
  for (int64_t r = 0; r < kPoolRows; ++r) {
    for (float& v : row) v = synth::next_uniform(state, 0.0f, kPadSpread);
    quantize_row(type, row.data(), out.data() + r * rb, n);
  }
  return out;
}

// The source's tensor bytes, then `extra` rows from the pool, in ~1 MiB pieces.
GgufTensorSource widened_rows(const GgufTensorInfo& t, int64_t extra, uint64_t seed) {
  return [&t, extra, seed](const GgufEmit& emit) {
    emit(t.data, t.nbytes);
    const std::vector<uint8_t> pool = padding_rows(t.type, t.ne[0], seed, t.name);
    const size_t rb = pool.size() / kPoolRows;
    for (int64_t r = 0; r < extra;) {
      const int64_t n = std::min<int64_t>(extra - r, kPoolRows);
      emit(pool.data(), rb * static_cast<size_t>(n));
      r += n;
    }
  };
}

// Each of the source's rows followed by `extra` zero values (zero bytes).
GgufTensorSource widened_columns(const GgufTensorInfo& t, int64_t extra) {
  return [&t, extra](const GgufEmit& emit) {
    const size_t rb = row_bytes(t.type, t.ne[0]);
    const std::vector<uint8_t> zeros(row_bytes(t.type, extra));
    for (int64_t r = 0; r < t.ne[1]; ++r) {
      emit(t.data + static_cast<size_t>(r) * rb, rb);
      emit(zeros.data(), zeros.size());
    }
  };
}

void make_standin(const StandinOptions& o) {
  FULGUR_CHECK(o.size.empty() || o.size_bytes == 0, "standin: --size and --size-bytes both given");
  FULGUR_CHECK(!o.size.empty() || o.size_bytes != 0, "standin: give --size (0.6b, 1.7b or 4b)");
  if (!o.size.empty()) {
    FULGUR_CHECK(std::find(kSizes.begin(), kSizes.end(), o.size) != kSizes.end(), "standin: unknown --size '", o.size,
                 "' (0.6b, 1.7b or 4b: the bytes per token of Qwen3 of that size)");
  }
  FULGUR_CHECK(std::filesystem::absolute(o.src) != std::filesystem::absolute(o.out),
               "standin: -o is the source file ", o.src);
  GgufReader reader(o.src);
  const std::string arch = reader.get_string("general.architecture");
  FULGUR_CHECK(arch != "dflash" && arch != "eagle3", reader.where(), " is a ", arch,
               " draft; a stand-in is made of a target model (its drafts then run against the stand-in as they are)");
  FULGUR_CHECK(kArchs.contains(arch), reader.where(), ": a stand-in cannot pad arch '", arch,
               "'; it widens the dense SwiGLU FFNs of qwen3, qwen2, llama and qwen35");
  const std::vector<Ffn> ffns = find_ffns(reader, arch);
  const DTypeInfo* asked = o.type.empty() ? nullptr : find_dtype(std::string_view(o.type));
  FULGUR_CHECK(o.type.empty() || (asked != nullptr && is_convert_type(asked->type)), "standin: unknown --type '",
               o.type, "' (f32, f16, bf16, q8_0, q4_0, q4_k or q6_k: a type of fulgur convert)");
  const DType type = asked != nullptr ? asked->type : ffns[0].gate->type;
  FULGUR_CHECK(is_convert_type(type), "standin: the source's FFN type ", dtype_name(type),
               " is not a --type of fulgur convert; give --type (q8_0, q4_k, ...) for the target's bytes");

  ModelOptions mo;
  mo.pack = false;  // only the bytes are wanted
  const Model model(std::move(reader), mo);
  const GgufReader& src = model.gguf();
  const uint64_t source_bytes = model.bytes_per_token();
  const uint64_t target = o.size_bytes != 0 ? o.size_bytes : qwen3_bytes_per_token(o.size, type);
  const std::string what = o.size_bytes != 0 ? cat(o.size_bytes, " bytes per token")
                                             : cat("Qwen3-", o.size, " at ", convert_type_name(type), ": ", target,
                                                   " bytes per token");
  FULGUR_CHECK(source_bytes < target, src.where(), " already reads ", source_bytes, " bytes per token, not less than ",
               what, "; a stand-in only adds bytes (pick a larger --size)");

  // Bytes per token of kUnit more units in every trunk block (an MTP block is not read per
  // decoded token, and Model::bytes_per_token leaves it out).
  const int64_t n_trunk = model.n_layer();
  uint64_t unit_bytes = 0;
  for (int64_t b = 0; b < n_trunk; ++b) {
    const Ffn& f = ffns[static_cast<size_t>(b)];
    unit_bytes += kUnit * (row_bytes(f.gate->type, f.gate->ne[0]) + row_bytes(f.up->type, f.up->ne[0])) +
                  static_cast<uint64_t>(f.down->ne[1]) * row_bytes(f.down->type, kUnit);
  }
  const double units = std::round(static_cast<double>(target - source_bytes) / static_cast<double>(unit_bytes));
  const int64_t extra = kUnit * std::max<int64_t>(1, static_cast<int64_t>(units));
  const uint64_t standin_bytes = source_bytes + unit_bytes * static_cast<uint64_t>(extra / kUnit);

  GgufWriter w;
  w.copy_metadata(src);
  if (src.has("general.alignment")) w.set_alignment(src.alignment());
  const std::string ff_key = arch + ".feed_forward_length";
  w.set(ff_key, widened(src.get(ff_key), extra, src.what(ff_key)));
  const std::string label = o.size.empty() ? cat(o.size_bytes, " bytes") : o.size;
  const std::string name = src.get_string("general.name", std::filesystem::path(o.src).stem().string());
  w.set_string("general.name", cat(name, " (stand-in ", label, ")"));
  w.set_string("fulgur.standin.size", label);
  w.set_string("fulgur.standin.source", std::filesystem::path(o.src).filename().string());
  w.set_u64("fulgur.standin.extra_ffn", static_cast<uint64_t>(extra));
  w.set_u64("fulgur.standin.target_bytes_per_token", target);

  Progress progress;
  progress.label = "standin";
  progress.on = !o.no_progress && isatty(STDERR_FILENO);
  progress.n_tensors = src.tensors().size();
  std::set<const GgufTensorInfo*> rows, columns;
  for (const Ffn& f : ffns) {
    rows.insert({f.gate, f.up});
    columns.insert(f.down);
  }
  for (const GgufTensorInfo& t : src.tensors()) {
    std::vector<int64_t> shape = t.shape();
    GgufTensorSource source = [&t](const GgufEmit& emit) { emit(t.data, t.nbytes); };
    if (rows.contains(&t)) {
      shape[1] += extra;
      source = widened_rows(t, extra, o.seed);
    } else if (columns.contains(&t)) {
      shape[0] += extra;
      source = widened_columns(t, extra);
    }
    const uint64_t nbytes = GgufWriter::tensor_nbytes(t.type, shape);
    progress.total += nbytes;
    w.add_tensor_streamed(t.name, t.type, shape, [source, nbytes, &progress](const GgufEmit& emit) {
      source(emit);
      progress.tensor_done(nbytes);
    });
  }
  try {
    w.write(o.out);
  } catch (...) {
    progress.abandon();
    throw;
  }

  // The written file, loaded: it must read what was computed.
  uint64_t written_bytes = 0;
  try {
    written_bytes = Model(o.out, mo).bytes_per_token();
  } catch (...) {
    std::filesystem::remove(o.out);
    throw;
  }
  if (written_bytes != standin_bytes) {
    std::filesystem::remove(o.out);
    FULGUR_CHECK(false, "standin: ", o.out, " reads ", written_bytes, " bytes per token, expected ", standin_bytes);
  }
  const double off = 100.0 * (static_cast<double>(standin_bytes) / static_cast<double>(target) - 1.0);
  std::fprintf(stderr,
               "standin: wrote %s (%s stand-in of %s: every FFN %lld units wider, the new ffn_down columns zero; "
               "%llu bytes per token, %+.2f%% of %s; the source reads %llu)\n",
               o.out.c_str(), arch.c_str(), o.src.c_str(), static_cast<long long>(extra),
               static_cast<unsigned long long>(standin_bytes), off, what.c_str(),
               static_cast<unsigned long long>(source_bytes));
}

}  // namespace

void add_standin_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StandinOptions>();
  CLI::App* cmd = app.add_subcommand(
      "standin",
      "copy a trained model into one that computes the same function but reads as many bytes per token as "
      "Qwen3-0.6B / 1.7B / 4B (every FFN widened by units whose ffn_down columns are zero)");
  cmd->add_option("-m,--model", o->src, "the source GGUF (qwen3, qwen2, llama, qwen35; its MTP block too)")
      ->required();
  cmd->add_option("--size", o->size, "0.6b | 1.7b | 4b: the bytes per decoded token of Qwen3 of that size");
  cmd->add_option("--type", o->type,
                  "the type the Qwen3 size is counted at (q8_0, q4_k: Q4_K_M's mix, ...); default the source's "
                  "FFN type. The source's tensors are not converted: the padding takes each tensor's own type");
  cmd->add_option("-o,--output", o->out, "the stand-in GGUF to write")->required();
  cmd->add_option("--seed", o->seed, "seed of the padding's gate/up values")->capture_default_str();
  cmd->add_flag("--no-progress", o->no_progress, "no progress bar on stderr (there is none when it is not a terminal)");
  // For tests: a small target instead of a Qwen3 size.
  cmd->add_option("--size-bytes", o->size_bytes, "")->group("");
  cmd->callback([o, &exit_code] {
    make_standin(*o);
    exit_code = 0;
  });
}

}  // namespace fulgur::cli
