// llama_quantize: llama.cpp's own quantizer, as a test oracle for the files fulgur reads. It
// dlopens the prebuilt libllama that npm's node-llama-cpp ships (nothing of llama.cpp is linked
// at build time) and calls llama_model_quantize on an f32/f16 GGUF, so the tests get files with
// llama.cpp's own type mixes (Q4_K_M puts Q6_K on some tensors, IQ4_XS falls back to IQ4_NL on
// rows that are no multiple of 256, ...) and its importance-free quantizers' exact bytes.
//
// usage: llama_quantize [OPTIONS] LIBLLAMA.so IN.gguf OUT.gguf FTYPE [THREADS [IMATRIX.dat]]
//   FTYPE: a llama.cpp ftype name (q8_0, q4_k_m, iq4_xs, ...; `list` prints them) or number.
//   OPTIONS, llama-quantize's per-tensor options as llama_model_quantize_params holds them (TYPE
//   is a ggml type id, the number of ggml.h's enum ggml_type):
//     --pure, --leave-output-tensor (quantize_output_tensor = false),
//     --output-tensor-type TYPE, --token-embedding-type TYPE,
//     --tensor-type PATTERN=TYPE (repeatable; tt_overrides, a regex searched in tensor names).
//   IMATRIX.dat: an importance matrix in llama.cpp's legacy format, read as llama-quantize reads
//   it (each entry's values divided by its call count) and handed to llama_model_quantize.
// Exit status 0 on success; 2 for bad arguments; 1 when the library cannot be used or
// llama_model_quantize fails (its log says why on stderr).
#include <dlfcn.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// llama.h's enum llama_ftype, for the ftypes the tests use (numbers are ABI, stable across
// llama.cpp releases). IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S and IQ1_M need an importance matrix
// (IMATRIX.dat): without one llama.cpp refuses them.
struct Ftype {
  const char* name;
  int32_t value;
};
constexpr Ftype kFtypes[] = {
    {"f32", 0},     {"f16", 1},      {"q4_0", 2},     {"q4_1", 3},     {"q8_0", 7},
    {"q5_0", 8},    {"q5_1", 9},     {"q2_k", 10},    {"q3_k_s", 11},  {"q3_k_m", 12},
    {"q3_k_l", 13}, {"q4_k_s", 14},  {"q4_k_m", 15},  {"q5_k_s", 16},  {"q5_k_m", 17},
    {"q6_k", 18},   {"iq4_nl", 25},  {"iq4_xs", 30},  {"bf16", 32},     {"iq2_xxs", 19},
    {"iq2_xs", 20}, {"iq3_xs", 22},  {"iq3_xxs", 23}, {"iq1_s", 24},    {"iq3_s", 26},
    {"iq3_m", 27},  {"iq2_s", 28},   {"iq2_m", 29},   {"iq1_m", 31},    {"tq1_0", 36},
    {"tq2_0", 37},
};

// llama_model_quantize_params as llama.h declares it: nthread and ftype are its first two
// fields in every release (the rest — tensor type overrides, flags, imatrix and override
// pointers — grew over time and stay at llama_model_quantize_default_params' values here). The
// struct is only ever filled by the library and handed back by pointer, so this mirror declares
// the two leading fields and reserves room for the rest: the real struct (64 bytes in the
// bundled release) is returned through a caller-provided buffer under the x86-64 SysV ABI, as is
// this larger one, so the library writes its bytes into `rest` and never past it.
struct QuantizeParams {
  int32_t nthread;
  int32_t ftype;
  alignas(8) unsigned char rest[248];
};
// llama.h: after nthread and ftype come output_tensor_type, token_embedding_type (4 bytes each)
// and six bools (allow_requantize, quantize_output_tensor, only_copy, pure, keep_split,
// dry_run), so the `imatrix` pointer (llama_model_imatrix_data*, entries ended by a null name)
// sits at byte 24 of the struct, byte 16 of `rest`; kv_overrides and tt_overrides
// (llama_model_tensor_override*, ended by a null pattern) follow it.
constexpr size_t kOutputTypeOffsetInRest = 0;
constexpr size_t kTokenEmbdTypeOffsetInRest = 4;
constexpr size_t kQuantizeOutputOffsetInRest = 9;
constexpr size_t kPureOffsetInRest = 11;
constexpr size_t kImatrixOffsetInRest = 16;
constexpr size_t kTensorOverridesOffsetInRest = 32;
struct TensorOverride {
  const char* pattern;
  int32_t type;  // enum ggml_type
};
struct ImatrixEntry {
  const char* name;
  const float* data;
  size_t size;
};

struct LegacyImatrix {
  std::vector<std::string> names;
  std::vector<std::vector<float>> values;
  std::vector<ImatrixEntry> entries;  // null-name terminated
};

bool read_legacy_imatrix(const char* path, LegacyImatrix* m) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  int32_t n = 0;
  bool ok = std::fread(&n, 4, 1, f) == 1 && n > 0;
  for (int32_t e = 0; ok && e < n; ++e) {
    int32_t len = 0, ncall = 0, nval = 0;
    ok = std::fread(&len, 4, 1, f) == 1 && len > 0 && len < 4096;
    std::string name(ok ? static_cast<size_t>(len) : 0, '\0');
    ok = ok && std::fread(name.data(), 1, name.size(), f) == name.size();
    ok = ok && std::fread(&ncall, 4, 1, f) == 1 && std::fread(&nval, 4, 1, f) == 1 && nval > 0;
    std::vector<float> v(ok ? static_cast<size_t>(nval) : 0);
    ok = ok && std::fread(v.data(), 4, v.size(), f) == v.size();
    if (ok && ncall > 0)
      for (float& x : v) x /= static_cast<float>(ncall);
    m->names.push_back(std::move(name));
    m->values.push_back(std::move(v));
  }
  std::fclose(f);
  if (!ok) return false;
  for (size_t i = 0; i < m->names.size(); ++i)
    m->entries.push_back({m->names[i].c_str(), m->values[i].data(), m->values[i].size()});
  m->entries.push_back({nullptr, nullptr, 0});
  return true;
}

using DefaultParamsFn = QuantizeParams (*)();
using QuantizeFn = uint32_t (*)(const char* fname_inp, const char* fname_out, const QuantizeParams* params);
using BackendInitFn = void (*)();

bool parse_ftype(const char* text, int32_t* out) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Ftype& f : kFtypes)
    if (s == f.name) {
      *out = f.value;
      return true;
    }
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > 1024) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

int usage() {
  std::fprintf(stderr,
               "usage: llama_quantize [--pure] [--leave-output-tensor] [--output-tensor-type TYPE] "
               "[--token-embedding-type TYPE] [--tensor-type PATTERN=TYPE]... LIBLLAMA.so IN.gguf OUT.gguf FTYPE "
               "[THREADS [IMATRIX.dat]]\n");
  return 2;
}

// A ggml type id (0..63); false for anything else.
bool parse_type_id(const char* text, int32_t* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > 63) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

// The options before the positional arguments.
struct Options {
  bool pure = false, leave_output = false;
  int32_t output_type = -1, token_embedding_type = -1;  // -1: the library's default
  std::vector<std::string> patterns;
  std::vector<int32_t> pattern_types;
  bool any() const {
    return pure || leave_output || output_type >= 0 || token_embedding_type >= 0 || !patterns.empty();
  }
};

// Parses argv[*i...] while they are options; false on a malformed one.
bool parse_options(int argc, char** argv, int* i, Options* o) {
  for (; *i < argc && std::strncmp(argv[*i], "--", 2) == 0; ++*i) {
    const std::string a = argv[*i];
    const bool has_value = *i + 1 < argc;
    if (a == "--pure") {
      o->pure = true;
    } else if (a == "--leave-output-tensor") {
      o->leave_output = true;
    } else if (a == "--output-tensor-type" && has_value) {
      if (!parse_type_id(argv[++*i], &o->output_type)) return false;
    } else if (a == "--token-embedding-type" && has_value) {
      if (!parse_type_id(argv[++*i], &o->token_embedding_type)) return false;
    } else if (a == "--tensor-type" && has_value) {
      const std::string v = argv[++*i];
      const size_t eq = v.find('=');
      int32_t type = 0;
      if (eq == std::string::npos || eq == 0 || !parse_type_id(v.c_str() + eq + 1, &type)) return false;
      o->patterns.push_back(v.substr(0, eq));
      o->pattern_types.push_back(type);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "list") == 0) {
    for (const Ftype& f : kFtypes) std::printf("%s %d\n", f.name, f.value);
    return 0;
  }
  Options options;
  int first = 1;
  if (!parse_options(argc, argv, &first, &options)) return usage();
  argv += first - 1;  // the positional arguments from argv[1] on
  argc -= first - 1;
  if (argc < 5 || argc > 7) return usage();
  int32_t ftype = 0;
  if (!parse_ftype(argv[4], &ftype)) {
    std::fprintf(stderr, "llama_quantize: unknown ftype '%s' (try `llama_quantize list`)\n", argv[4]);
    return 2;
  }
  int threads = 1;
  if (argc >= 6) {
    threads = std::atoi(argv[5]);
    if (threads < 1) {
      std::fprintf(stderr, "llama_quantize: THREADS must be >= 1, got '%s'\n", argv[5]);
      return 2;
    }
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "llama_quantize: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  const auto defaults = reinterpret_cast<DefaultParamsFn>(dlsym(lib, "llama_model_quantize_default_params"));
  const auto quantize = reinterpret_cast<QuantizeFn>(dlsym(lib, "llama_model_quantize"));
  const auto backend_init = reinterpret_cast<BackendInitFn>(dlsym(lib, "llama_backend_init"));
  if (defaults == nullptr || quantize == nullptr) {
    std::fprintf(stderr, "llama_quantize: %s does not export llama_model_quantize(_default_params)\n", argv[1]);
    return 1;
  }
  if (backend_init != nullptr) backend_init();
  QuantizeParams params = defaults();
  params.nthread = threads;
  params.ftype = ftype;
  LegacyImatrix imatrix;
  if (argc == 7) {
    if (!read_legacy_imatrix(argv[6], &imatrix)) {
      std::fprintf(stderr, "llama_quantize: cannot read the legacy imatrix %s\n", argv[6]);
      return 2;
    }
    const ImatrixEntry* p = imatrix.entries.data();
    std::memcpy(params.rest + kImatrixOffsetInRest, &p, sizeof(p));
  }
  std::vector<TensorOverride> overrides;  // null-pattern terminated
  if (options.any()) {
    // The defaults say whether the fields are where this mirror puts them: both types
    // GGML_TYPE_COUNT (the same value, past every real type), quantize_output_tensor true, pure false.
    int32_t out_type = 0, embd_type = 0;
    std::memcpy(&out_type, params.rest + kOutputTypeOffsetInRest, 4);
    std::memcpy(&embd_type, params.rest + kTokenEmbdTypeOffsetInRest, 4);
    if (out_type != embd_type || out_type < 40 || out_type > 63 || params.rest[kQuantizeOutputOffsetInRest] != 1 ||
        params.rest[kPureOffsetInRest] != 0) {
      std::fprintf(stderr, "llama_quantize: %s's llama_model_quantize_params is not laid out as this tool expects\n",
                   argv[1]);
      return 1;
    }
    if (options.output_type >= 0) std::memcpy(params.rest + kOutputTypeOffsetInRest, &options.output_type, 4);
    if (options.token_embedding_type >= 0) {
      std::memcpy(params.rest + kTokenEmbdTypeOffsetInRest, &options.token_embedding_type, 4);
    }
    if (options.leave_output) params.rest[kQuantizeOutputOffsetInRest] = 0;
    if (options.pure) params.rest[kPureOffsetInRest] = 1;
    if (!options.patterns.empty()) {
      for (size_t i = 0; i < options.patterns.size(); ++i) {
        overrides.push_back({options.patterns[i].c_str(), options.pattern_types[i]});
      }
      overrides.push_back({nullptr, out_type});  // llama-quantize ends the list with GGML_TYPE_COUNT
      const TensorOverride* p = overrides.data();
      std::memcpy(params.rest + kTensorOverridesOffsetInRest, &p, sizeof(p));
    }
  }
  const uint32_t rc = quantize(argv[2], argv[3], &params);
  if (rc != 0) {
    std::fprintf(stderr, "llama_quantize: llama_model_quantize(%s -> %s, ftype %d) failed with %u\n", argv[2],
                 argv[3], ftype, rc);
    return 1;
  }
  return 0;
}
