// llama_quantize: llama.cpp's own quantizer, as a test oracle for the files fulgur reads. It
// dlopens the prebuilt libllama that npm's node-llama-cpp ships (nothing of llama.cpp is linked
// at build time) and calls llama_model_quantize on an f32/f16 GGUF, so the tests get files with
// llama.cpp's own type mixes (Q4_K_M puts Q6_K on some tensors, IQ4_XS falls back to IQ4_NL on
// rows that are no multiple of 256, ...) and its importance-free quantizers' exact bytes.
//
// usage: llama_quantize LIBLLAMA.so IN.gguf OUT.gguf FTYPE [THREADS [IMATRIX.dat]]
//   FTYPE: a llama.cpp ftype name (q8_0, q4_k_m, iq4_xs, ...; `list` prints them) or number.
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
// and six bools, so the `imatrix` pointer (llama_model_imatrix_data*, entries ended by a null
// name) sits at byte 24 of the struct, byte 16 of `rest`.
constexpr size_t kImatrixOffsetInRest = 16;
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
  std::fprintf(stderr, "usage: llama_quantize LIBLLAMA.so IN.gguf OUT.gguf FTYPE [THREADS [IMATRIX.dat]]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "list") == 0) {
    for (const Ftype& f : kFtypes) std::printf("%s %d\n", f.name, f.value);
    return 0;
  }
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
  const uint32_t rc = quantize(argv[2], argv[3], &params);
  if (rc != 0) {
    std::fprintf(stderr, "llama_quantize: llama_model_quantize(%s -> %s, ftype %d) failed with %u\n", argv[2],
                 argv[3], ftype, rc);
    return 1;
  }
  return 0;
}
