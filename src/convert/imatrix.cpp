#include "convert/imatrix.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace fulgur {
namespace {

ImportanceMatrix read_gguf(const std::string& path) {
  const GgufReader r(path);
  for (const char* key : {"imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"}) {
    FULGUR_CHECK(r.has(key), r.where(), ": no key ", key, " (llama.cpp refuses an imatrix without its metadata too)");
  }
  ImportanceMatrix m;
  if (const GgufValue* d = r.find("imatrix.datasets"); d != nullptr && d->is_array()) {
    m.datasets = r.get_string_array("imatrix.datasets");
  }
  m.chunk_count = r.get_i64("imatrix.chunk_count", 0);
  const std::string sums = ".in_sum2", counts = ".counts";
  for (const GgufTensorInfo& t : r.tensors()) {
    if (!t.name.ends_with(sums)) {
      FULGUR_CHECK(!t.name.ends_with(counts) || r.find_tensor(t.name.substr(0, t.name.size() - counts.size()) + sums),
                   r.where(), ": '", t.name, "' has no matching ", sums, " tensor");
      continue;
    }
    const std::string name = t.name.substr(0, t.name.size() - sums.size());
    const GgufTensorInfo* c = r.find_tensor(name + counts);
    FULGUR_CHECK(c != nullptr, r.where(), ": '", t.name, "' has no matching '", name, counts, "' tensor");
    FULGUR_CHECK(t.type == DType::kF32 && c->type == DType::kF32, r.where(), ": '", name,
                 "' sums and counts must be f32");
    const int64_t n = t.n_elements(), n_mat = c->n_elements();
    FULGUR_CHECK(n_mat > 0 && n % n_mat == 0, r.where(), ": '", name, "' has ", n, " sums for ", n_mat, " counts");
    const int64_t per_row = n / n_mat;
    std::vector<float> s(static_cast<size_t>(n)), k(static_cast<size_t>(n_mat));
    std::memcpy(s.data(), t.data, s.size() * sizeof(float));
    std::memcpy(k.data(), c->data, k.size() * sizeof(float));
    std::vector<float>& v = m.values[name];
    v.resize(static_cast<size_t>(n));
    for (int64_t e = 0; e < n_mat; ++e) {
      const float count = static_cast<float>(std::lround(k[static_cast<size_t>(e)]));
      for (int64_t i = 0; i < per_row; ++i) {
        const size_t at = static_cast<size_t>(e * per_row + i);
        v[at] = count > 0.0f ? s[at] / count : 1.0f;
      }
    }
  }
  return m;
}

// Little-endian reads from a byte buffer, naming the file on truncation.
struct Cursor {
  const std::string& path;
  const std::vector<char>& bytes;
  size_t at = 0;
  bool more() const { return at < bytes.size(); }
  void read(void* out, size_t n, const char* what) {
    FULGUR_CHECK(n <= bytes.size() - at, "imatrix '", path, "': truncated while reading ", what, " at byte ", at);
    std::memcpy(out, bytes.data() + at, n);
    at += n;
  }
  int32_t i32(const char* what) {
    int32_t v = 0;
    read(&v, 4, what);
    return v;
  }
};

ImportanceMatrix read_legacy(const std::string& path, const std::vector<char>& bytes) {
  ImportanceMatrix m;
  m.legacy = true;
  Cursor c{path, bytes};
  const int32_t n_entries = c.i32("the entry count");
  FULGUR_CHECK(n_entries > 0, "imatrix '", path, "': not a GGUF file and not a legacy imatrix (", n_entries,
               " entries)");
  for (int32_t e = 0; e < n_entries; ++e) {
    const int32_t len = c.i32("a name length");
    FULGUR_CHECK(len > 0 && len < 4096, "imatrix '", path, "': entry ", e, " has a name of ", len, " bytes");
    std::string name(static_cast<size_t>(len), '\0');
    c.read(name.data(), name.size(), "a name");
    const int32_t ncall = c.i32("a call count");
    const int32_t nval = c.i32("a value count");
    FULGUR_CHECK(nval > 0, "imatrix '", path, "': entry '", name, "' has ", nval, " values");
    std::vector<float> v(static_cast<size_t>(nval));
    c.read(v.data(), v.size() * sizeof(float), "values");
    if (ncall > 0) {
      for (float& x : v) x /= static_cast<float>(ncall);
    }
    m.values[name] = std::move(v);
  }
  if (c.more()) {  // optional: chunk count, dataset name
    m.chunk_count = c.i32("the chunk count");
    if (c.more()) {
      const int32_t len = c.i32("the dataset name length");
      if (len > 0) {
        std::string d(static_cast<size_t>(len), '\0');
        c.read(d.data(), d.size(), "the dataset name");
        m.datasets.push_back(d.c_str());
      }
    }
  }
  return m;
}

}  // namespace

ImportanceMatrix read_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in.good(), "imatrix '", path, "': cannot open it");
  char magic[4] = {};
  in.read(magic, 4);
  ImportanceMatrix m;
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) {
    in.close();
    m = read_gguf(path);
  } else {
    in.clear();
    in.seekg(0);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    m = read_legacy(path, bytes);
  }
  FULGUR_CHECK(!m.values.empty(), "imatrix '", path, "': no entries");
  for (const auto& [name, v] : m.values) {
    for (float x : v) FULGUR_CHECK(std::isfinite(x), "imatrix '", path, "': entry '", name, "' has a non-finite value");
  }
  return m;
}

}  // namespace fulgur
