#include "gguf/gguf_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <ostream>
#include <utility>

namespace fulgur {
namespace {

// Smallest encodings, used to bound counts by the bytes left before anything is allocated.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;  // key length, 1-byte key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, ne0, type, offset

// What a read is of, for error messages: `what`, then " element <element>" when element >= 0,
// then `suffix`. Spelled out only when a read fails: naming each of a vocabulary's 150k strings
// eagerly took most of the time to open a model.
struct Field {
  // Implicit, so a read may name its field with any string.
  Field(std::string_view w, int64_t e = -1, std::string_view s = {})
      : what(w), element(e), suffix(s) {}
  Field(const std::string& w) : Field(std::string_view(w)) {}
  Field(const char* w) : Field(std::string_view(w)) {}
  std::string_view what;
  int64_t element;
  std::string_view suffix;
};

std::ostream& operator<<(std::ostream& out, const Field& f) {
  out << f.what;
  if (f.element >= 0) out << " element " << f.element;
  return out << f.suffix;
}

// Bounds-checked little-endian reads over [data, data + size). Every read names what it reads so a
// truncation error says which field was cut.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, std::string where)
      : data_(data), size_(size), where_(std::move(where)) {}

  size_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const std::string& where() const { return where_; }

  const uint8_t* take(uint64_t n, const Field& what) {
    if (n > remaining()) {
      fail(where_, ": truncated reading ", what, " at byte ", pos_, ": need ", n, " bytes, ",
           remaining(), " left");
    }
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  template <class T>
  T read(const Field& what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string read_string(const Field& what) {
    const uint64_t len = read<uint64_t>(Field(what.what, what.element, " length"));
    if (len > remaining()) {
      fail(where_, ": ", what, " length ", len, " at byte ", pos_ - 8, " exceeds the ", remaining(),
           " bytes left in the file");
    }
    const uint8_t* p = take(len, what);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string where_;
};

GgufValue read_value(Cursor& in, GgufType type, const std::string& what) {
  switch (type) {
    case GgufType::kUint8:
      return GgufValue::scalar(in.read<uint8_t>(what));
    case GgufType::kInt8:
      return GgufValue::scalar(in.read<int8_t>(what));
    case GgufType::kUint16:
      return GgufValue::scalar(in.read<uint16_t>(what));
    case GgufType::kInt16:
      return GgufValue::scalar(in.read<int16_t>(what));
    case GgufType::kUint32:
      return GgufValue::scalar(in.read<uint32_t>(what));
    case GgufType::kInt32:
      return GgufValue::scalar(in.read<int32_t>(what));
    case GgufType::kFloat32:
      return GgufValue::scalar(in.read<float>(what));
    case GgufType::kUint64:
      return GgufValue::scalar(in.read<uint64_t>(what));
    case GgufType::kInt64:
      return GgufValue::scalar(in.read<int64_t>(what));
    case GgufType::kFloat64:
      return GgufValue::scalar(in.read<double>(what));
    case GgufType::kBool: {
      const uint8_t b = in.read<uint8_t>(what);
      if (b > 1) fail(in.where(), ": ", what, ": BOOL byte is ", +b, ", expected 0 or 1");
      return GgufValue::scalar(b == 1);
    }
    case GgufType::kString:
      return GgufValue::string(in.read_string(what));
    case GgufType::kArray: {
      const uint32_t elem_id = in.read<uint32_t>(cat(what, " array element type"));
      if (!gguf_type_valid(elem_id)) {
        fail(in.where(), ": ", what, ": unknown array element type ", elem_id, " (expected 0..12)");
      }
      const GgufType elem = static_cast<GgufType>(elem_id);
      if (elem == GgufType::kArray)
        fail(in.where(), ": ", what, ": nested arrays are not supported");
      const uint64_t count = in.read<uint64_t>(cat(what, " array length"));
      // A string element needs at least its 8-byte length.
      const uint64_t min_elem = elem == GgufType::kString ? 8 : gguf_scalar_size(elem);
      if (count > in.remaining() / min_elem) {
        fail(in.where(), ": ", what, ": array of ", count, " ", gguf_type_name(elem),
             " needs at least ", min_elem, " bytes per element but only ", in.remaining(),
             " bytes are left");
      }
      if (elem == GgufType::kString) {
        std::vector<std::string> strings;
        strings.reserve(static_cast<size_t>(count));
        for (uint64_t i = 0; i < count; ++i)
          strings.push_back(in.read_string(Field(what, static_cast<int64_t>(i))));
        return GgufValue::string_array(std::move(strings));
      }
      const size_t nbytes = static_cast<size_t>(count * min_elem);
      const uint8_t* p = in.take(nbytes, what);
      if (elem == GgufType::kBool) {
        for (uint64_t i = 0; i < count; ++i) {
          if (p[i] > 1) {
            fail(in.where(), ": ", what, " element ", i, ": BOOL byte is ", +p[i],
                 ", expected 0 or 1");
          }
        }
      }
      return GgufValue::raw_array(elem, static_cast<size_t>(count),
                                  std::vector<uint8_t>(p, p + nbytes));
    }
  }
  fail(in.where(), ": ", what, ": unknown value type ", static_cast<uint32_t>(type));
}

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

}  // namespace

GgufReader::GgufReader(const std::string& path) : name_(path) {
  file_ = std::make_unique<MappedFile>(path);
  data_ = file_->data();
  size_ = file_->size();
  parse();
}

GgufReader::GgufReader(const uint8_t* data, size_t size, std::string name)
    : name_(std::move(name)), data_(data), size_(size) {
  parse();
}

GgufReader::GgufReader(std::vector<uint8_t> bytes, std::string name)
    : name_(std::move(name)), owned_(std::move(bytes)) {
  data_ = owned_.data();
  size_ = owned_.size();
  parse();
}

std::string GgufReader::where() const {
  return name_.empty() ? std::string("GGUF buffer") : cat("file '", name_, "'");
}

std::string GgufReader::what(std::string_view key) const {
  return cat(where(), ": key '", key, "'");
}

void GgufReader::parse() {
  const std::string where_str = where();
  Cursor in(data_, size_, where_str);

  // ---- header ----
  const uint32_t magic = in.read<uint32_t>("magic");
  if (magic != kGgufMagic) {
    fail(where_str, ": not a GGUF file: magic bytes are 0x", std::hex, magic, std::dec,
         " (as a little-endian u32), expected 0x46554747 (\"GGUF\")");
  }
  version_ = in.read<uint32_t>("version");
  if ((version_ & 0xFFFF) == 0) {
    // A byte-swapped small version number lands in the high half.
    fail(where_str, ": version field is 0x", std::hex, version_, std::dec,
         ": the file looks big-endian, only little-endian GGUF is supported");
  }
  if (version_ == 1) fail(where_str, ": GGUF version 1 is not supported (expected 2 or 3)");
  if (version_ > kGgufVersion) {
    fail(where_str, ": GGUF version ", version_, " is newer than supported (expected 2 or 3)");
  }
  if (version_ < 2) fail(where_str, ": invalid GGUF version ", version_, " (expected 2 or 3)");

  const uint64_t n_tensors = in.read<uint64_t>("tensor count");
  const uint64_t n_kv = in.read<uint64_t>("metadata key/value count");
  // Each count is bounded by the bytes left so that a lying header cannot make us allocate.
  if (n_kv > in.remaining() / kMinKvBytes) {
    fail(where_str, ": metadata key/value count ", n_kv, " cannot fit in the ", in.remaining(),
         " bytes after the header (each pair needs at least ", kMinKvBytes, ")");
  }
  const uint64_t after_kvs = in.remaining() - n_kv * kMinKvBytes;
  if (n_tensors > after_kvs / kMinTensorInfoBytes) {
    fail(where_str, ": tensor count ", n_tensors, " cannot fit in the ", in.remaining(),
         " bytes after the header: ", n_kv, " metadata pairs take at least ", n_kv * kMinKvBytes,
         ", leaving ", after_kvs, " for tensor infos of at least ", kMinTensorInfoBytes,
         " bytes each");
  }

  // ---- metadata ----
  kvs_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = in.read_string(cat("key #", i));
    if (key.empty()) fail(where_str, ": key #", i, " is empty");
    const std::string kwhat = cat("key '", key, "'");
    const uint32_t type_id = in.read<uint32_t>(cat(kwhat, " value type"));
    if (!gguf_type_valid(type_id)) {
      fail(where_str, ": ", kwhat, ": unknown value type ", type_id, " (expected 0..12)");
    }
    GgufValue value = read_value(in, static_cast<GgufType>(type_id), kwhat);
    if (!kv_index_.emplace(key, kvs_.size()).second) {
      fail(where_str, ": duplicate ", kwhat, " (pair #", i, ")");
    }
    kvs_.push_back({std::move(key), std::move(value)});
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (a->type() != GgufType::kUint32) {
      fail(what("general.alignment"), ": must be UINT32, got ", a->type_name());
    }
    const uint32_t v = a->get<uint32_t>();
    if (v == 0 || (v & (v - 1)) != 0) {
      fail(what("general.alignment"), ": value ", v, " is not a non-zero power of two");
    }
    alignment_ = v;
  }

  // ---- tensor infos ----
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = in.read_string(cat("tensor #", i, " name"));
    if (t.name.empty()) fail(where_str, ": tensor #", i, " has an empty name");
    const std::string twhat = cat("tensor '", t.name, "'");
    if (t.name.size() > kGgufMaxTensorName) {
      fail(where_str, ": ", twhat, ": name is ", t.name.size(), " bytes, at most ",
           kGgufMaxTensorName, " allowed");
    }
    t.n_dims = in.read<uint32_t>(cat(twhat, " n_dims"));
    if (t.n_dims < 1 || t.n_dims > kGgufMaxDims) {
      fail(where_str, ": ", twhat, ": n_dims is ", t.n_dims, ", expected 1..", kGgufMaxDims);
    }
    uint64_t n_elem = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t ne = in.read<uint64_t>(cat(twhat, " dim ", d));
      if (ne == 0 || ne > static_cast<uint64_t>(INT64_MAX)) {
        fail(where_str, ": ", twhat, " dim ", d, " is ", ne, ", expected 1..", INT64_MAX);
      }
      if (n_elem > static_cast<uint64_t>(INT64_MAX) / ne) {
        fail(where_str, ": ", twhat, " dim ", d, " = ", ne, " makes the element count overflow");
      }
      n_elem *= ne;
      t.ne[d] = static_cast<int64_t>(ne);
    }
    const uint32_t type_id = in.read<uint32_t>(cat(twhat, " type"));
    const DTypeInfo* info = find_dtype(type_id);
    if (info == nullptr) fail(where_str, ": ", twhat, ": unknown tensor type id ", type_id);
    t.type = info->type;
    if (t.ne[0] % info->block_size != 0) {
      fail(where_str, ": ", twhat, " dim 0 is ", t.ne[0], ", not a multiple of the block size ",
           info->block_size, " of type ", info->name);
    }
    // nbytes = blocks per row * bytes per block * rows, each step checked for overflow.
    const uint64_t rows = n_elem / static_cast<uint64_t>(t.ne[0]);
    const uint64_t row_bytes =
        static_cast<uint64_t>(t.ne[0] / info->block_size) * static_cast<uint64_t>(info->type_size);
    if (row_bytes / static_cast<uint64_t>(info->type_size) !=
            static_cast<uint64_t>(t.ne[0] / info->block_size) ||
        rows > static_cast<uint64_t>(INT64_MAX) / row_bytes) {
      fail(where_str, ": ", twhat, ": byte size of ", n_elem, " elements of ", info->name,
           " overflows");
    }
    t.nbytes = rows * row_bytes;
    t.offset = in.read<uint64_t>(cat(twhat, " offset"));
    if (t.offset % alignment_ != 0) {
      fail(where_str, ": ", twhat, ": offset ", t.offset, " is not a multiple of the alignment ",
           alignment_);
    }
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
      fail(where_str, ": duplicate tensor name '", t.name, "' (tensor #", i, ")");
    }
    tensors_.push_back(std::move(t));
  }

  // ---- data section ----
  data_offset_ = align_up(in.pos(), alignment_);
  const uint64_t data_bytes = data_offset_ <= size_ ? size_ - data_offset_ : 0;
  for (GgufTensorInfo& t : tensors_) {
    if (data_offset_ > size_ || t.offset > data_bytes || t.nbytes > data_bytes - t.offset) {
      fail(where_str, ": tensor '", t.name, "': data [", t.offset, ", ", t.offset, " + ", t.nbytes,
           ") extends past the end of the data section (", data_bytes, " bytes from file offset ",
           data_offset_, ")");
    }
    t.data = data_ + data_offset_ + t.offset;
  }
  std::vector<size_t> order(tensors_.size());  // tensor indices sorted by offset
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = tensors_[order[k - 1]];
    const GgufTensorInfo& cur = tensors_[order[k]];
    if (prev.offset + prev.nbytes > cur.offset) {
      fail(where_str, ": tensor '", cur.name, "' at offset ", cur.offset, " overlaps tensor '",
           prev.name, "' at [", prev.offset, ", ", prev.offset + prev.nbytes, ")");
    }
  }
}

const GgufValue* GgufReader::find(std::string_view key) const {
  const auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const GgufValue& GgufReader::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) fail(where(), ": missing key '", key, "'");
  return *v;
}

float GgufReader::get_f32(std::string_view key) const {
  return static_cast<float>(get(key).get_float(what(key)));
}
float GgufReader::get_f32(std::string_view key, float fallback) const {
  const GgufValue* v = find(key);
  return v != nullptr ? static_cast<float>(v->get_float(what(key))) : fallback;
}
double GgufReader::get_f64(std::string_view key) const {
  return get(key).get_float(what(key));
}
double GgufReader::get_f64(std::string_view key, double fallback) const {
  const GgufValue* v = find(key);
  return v != nullptr ? v->get_float(what(key)) : fallback;
}
const std::string& GgufReader::get_string(std::string_view key) const {
  return get(key).get_string(what(key));
}
std::string GgufReader::get_string(std::string_view key, const std::string& fallback) const {
  const GgufValue* v = find(key);
  return v != nullptr ? v->get_string(what(key)) : fallback;
}
bool GgufReader::get_bool(std::string_view key) const {
  return get(key).get_bool(what(key));
}
bool GgufReader::get_bool(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  return v != nullptr ? v->get_bool(what(key)) : fallback;
}
const std::vector<std::string>& GgufReader::get_string_array(std::string_view key) const {
  return get(key).get_strings(what(key));
}

const GgufTensorInfo* GgufReader::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufReader::tensor(std::string_view name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (t == nullptr) fail(where(), ": missing tensor '", name, "'");
  return *t;
}

}  // namespace fulgur
