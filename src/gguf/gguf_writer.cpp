#include "gguf/gguf_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace fulgur {
namespace {

constexpr char kAlignmentKey[] = "general.alignment";

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

// Little-endian encoders on top of an emit function.
class Encoder {
 public:
  explicit Encoder(const GgufEmit& out) : out_(out) {}
  template <class T>
  void put(T v) {
    out_(&v, sizeof v);
    pos_ += sizeof v;
  }
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    out_(p, n);
    pos_ += n;
  }
  void string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void zeros(uint64_t n) {
    static const uint8_t kZeros[256] = {};
    while (n > 0) {
      const size_t k = n < sizeof kZeros ? static_cast<size_t>(n) : sizeof kZeros;
      bytes(kZeros, k);
      n -= k;
    }
  }
  uint64_t pos() const { return pos_; }

 private:
  const GgufEmit& out_;
  uint64_t pos_ = 0;
};

void encode_value(Encoder& enc, const GgufValue& v) {
  if (v.type() == GgufType::kString) {
    enc.string(v.get_string());
    return;
  }
  if (!v.is_array()) {
    switch (v.type()) {
      case GgufType::kUint8:
        enc.put(v.get<uint8_t>());
        return;
      case GgufType::kInt8:
        enc.put(v.get<int8_t>());
        return;
      case GgufType::kUint16:
        enc.put(v.get<uint16_t>());
        return;
      case GgufType::kInt16:
        enc.put(v.get<int16_t>());
        return;
      case GgufType::kUint32:
        enc.put(v.get<uint32_t>());
        return;
      case GgufType::kInt32:
        enc.put(v.get<int32_t>());
        return;
      case GgufType::kFloat32:
        enc.put(v.get<float>());
        return;
      case GgufType::kBool:
        enc.put<uint8_t>(v.get<bool>() ? 1 : 0);
        return;
      case GgufType::kUint64:
        enc.put(v.get<uint64_t>());
        return;
      case GgufType::kInt64:
        enc.put(v.get<int64_t>());
        return;
      case GgufType::kFloat64:
        enc.put(v.get<double>());
        return;
      default:
        fail("cannot encode value of type ", v.type_name());
    }
  }
  enc.put<uint32_t>(static_cast<uint32_t>(v.element_type()));
  enc.put<uint64_t>(v.size());
  if (v.element_type() == GgufType::kString) {
    for (const std::string& s : v.get_strings()) enc.string(s);
    return;
  }
  const std::vector<uint8_t>& raw = v.array_bytes();
  enc.bytes(raw.data(), raw.size());
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  FULGUR_CHECK(!key.empty(), "GGUF writer: empty metadata key");
  if (key == kAlignmentKey) {
    FULGUR_CHECK(value.type() == GgufType::kUint32, "GGUF writer: key '", key,
                 "' must be UINT32, got ", value.type_name());
    const uint32_t a = value.get<uint32_t>();
    FULGUR_CHECK(a != 0 && (a & (a - 1)) == 0, "GGUF writer: key '", key, "': value ", a,
                 " is not a non-zero power of two");
    alignment_ = a;
  }
  const auto it = kv_index_.find(key);
  if (it != kv_index_.end()) {
    kvs_[it->second].value = std::move(value);
    return;
  }
  kv_index_.emplace(key, kvs_.size());
  kvs_.push_back({key, std::move(value)});
}

void GgufWriter::set_alignment(uint32_t alignment) {
  set(kAlignmentKey, GgufValue::scalar(alignment));
}

void GgufWriter::remove(const std::string& key) {
  const auto it = kv_index_.find(key);
  if (it == kv_index_.end()) return;
  kvs_.erase(kvs_.begin() + static_cast<std::ptrdiff_t>(it->second));
  kv_index_.clear();
  for (size_t i = 0; i < kvs_.size(); ++i) kv_index_.emplace(kvs_[i].key, i);
  if (key == kAlignmentKey) alignment_ = kGgufDefaultAlignment;
}

const GgufValue* GgufWriter::find(std::string_view key) const {
  const auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

void GgufWriter::copy_metadata(const GgufReader& reader) {
  for (const GgufKv& kv : reader.metadata()) {
    if (kv.key != kAlignmentKey) set(kv.key, kv.value);
  }
}

uint64_t GgufWriter::tensor_nbytes(DType type, const std::vector<int64_t>& shape) {
  const DTypeInfo* info = find_dtype(static_cast<uint32_t>(type));
  FULGUR_CHECK(info != nullptr, "unknown tensor type id ", static_cast<uint32_t>(type));
  FULGUR_CHECK(!shape.empty() && shape.size() <= static_cast<size_t>(kGgufMaxDims), "tensor has ",
               shape.size(), " dims, expected 1..", kGgufMaxDims);
  uint64_t rows = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    FULGUR_CHECK(shape[d] > 0, "tensor dim ", d, " is ", shape[d], ", expected > 0");
    if (d > 0) {
      FULGUR_CHECK(rows <= static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(shape[d]),
                   "tensor dim ", d, " = ", shape[d], " overflows the element count");
      rows *= static_cast<uint64_t>(shape[d]);
    }
  }
  FULGUR_CHECK(shape[0] % info->block_size == 0, "tensor dim 0 is ", shape[0],
               ", not a multiple of the block size ", info->block_size, " of type ", info->name);
  const uint64_t blocks = static_cast<uint64_t>(shape[0] / info->block_size);
  const uint64_t tsize = static_cast<uint64_t>(info->type_size);
  FULGUR_CHECK(blocks <= static_cast<uint64_t>(INT64_MAX) / tsize &&
                   rows <= static_cast<uint64_t>(INT64_MAX) / (blocks * tsize),
               "tensor byte size overflows");
  return rows * blocks * tsize;
}

void GgufWriter::check_new_tensor(const std::string& name, DType type,
                                  const std::vector<int64_t>& shape) const {
  FULGUR_CHECK(!name.empty() && name.size() <= kGgufMaxTensorName, "GGUF writer: tensor name '",
               name, "' is ", name.size(), " bytes, expected 1..", kGgufMaxTensorName);
  FULGUR_CHECK(!tensor_index_.contains(name), "GGUF writer: duplicate tensor '", name, "'");
  try {
    (void)tensor_nbytes(type, shape);
  } catch (const Error& e) {
    fail("GGUF writer: tensor '", name, "': ", e.what());
  }
}

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                            std::vector<uint8_t> bytes) {
  check_new_tensor(name, type, shape);
  const uint64_t nbytes = tensor_nbytes(type, shape);
  FULGUR_CHECK(bytes.size() == nbytes, "GGUF writer: tensor '", name, "' has ", bytes.size(),
               " bytes, expected ", nbytes, " for its type and shape");
  tensor_index_.emplace(name, tensors_.size());
  tensors_.push_back({name, type, shape, nbytes, std::move(bytes), {}});
}

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                            const void* data, size_t nbytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  add_tensor(name, type, shape, std::vector<uint8_t>(p, p + nbytes));
}

void GgufWriter::add_tensor_streamed(const std::string& name, DType type,
                                     const std::vector<int64_t>& shape, GgufTensorSource source) {
  check_new_tensor(name, type, shape);
  FULGUR_CHECK(static_cast<bool>(source), "GGUF writer: tensor '", name, "' has no source");
  tensor_index_.emplace(name, tensors_.size());
  tensors_.push_back({name, type, shape, tensor_nbytes(type, shape), {}, std::move(source)});
}

void GgufWriter::serialize(const GgufEmit& out) const {
  Encoder enc(out);
  enc.put<uint32_t>(kGgufMagic);
  enc.put<uint32_t>(kGgufVersion);
  enc.put<uint64_t>(tensors_.size());
  enc.put<uint64_t>(kvs_.size());
  for (const GgufKv& kv : kvs_) {
    enc.string(kv.key);
    enc.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    encode_value(enc, kv.value);
  }
  uint64_t offset = 0;  // running data offset, each tensor padded to the alignment
  for (const Tensor& t : tensors_) {
    enc.string(t.name);
    enc.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (int64_t ne : t.shape) enc.put<uint64_t>(static_cast<uint64_t>(ne));
    enc.put<uint32_t>(static_cast<uint32_t>(t.type));
    enc.put<uint64_t>(offset);
    offset += align_up(t.nbytes, alignment_);
  }
  // Only pad when there is a data section, as an empty one needs no alignment.
  if (!tensors_.empty()) enc.zeros(align_up(enc.pos(), alignment_) - enc.pos());
  for (const Tensor& t : tensors_) {
    if (!t.source) {
      enc.bytes(t.bytes.data(), t.bytes.size());
    } else {
      uint64_t emitted = 0;
      const GgufEmit emit = [&](const void* p, size_t n) {
        FULGUR_CHECK(n <= t.nbytes - emitted, "GGUF writer: tensor '", t.name,
                     "': source emitted more than its ", t.nbytes, " bytes");
        enc.bytes(p, n);
        emitted += n;
      };
      t.source(emit);
      FULGUR_CHECK(emitted == t.nbytes, "GGUF writer: tensor '", t.name, "': source emitted ",
                   emitted, " bytes, expected ", t.nbytes);
    }
    enc.zeros(align_up(t.nbytes, alignment_) - t.nbytes);
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  serialize([&](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  });
  return out;
}

void GgufWriter::write(const std::string& path) const {
  const std::string tmp = cat(path, ".tmp.", ::getpid());
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  // Declared before the FILE so it outlives every fclose below.
  std::vector<char> buffer(size_t{1} << 20);  // [1 MiB] stdio buffer: few large writes
  std::unique_ptr<std::FILE, Closer> file(std::fopen(tmp.c_str(), "wb"));
  if (!file) fail("cannot create '", tmp, "': ", std::strerror(errno));
  try {
    std::setvbuf(file.get(), buffer.data(), _IOFBF, buffer.size());
    serialize([&](const void* p, size_t n) {
      if (std::fwrite(p, 1, n, file.get()) != n) {
        fail("cannot write '", tmp, "': ", std::strerror(errno));
      }
    });
    if (std::fflush(file.get()) != 0) fail("cannot write '", tmp, "': ", std::strerror(errno));
    std::FILE* f = file.release();
    if (std::fclose(f) != 0) fail("cannot close '", tmp, "': ", std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      fail("cannot rename '", tmp, "' to '", path, "': ", std::strerror(errno));
    }
  } catch (...) {
    file.reset();  // close before removing
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace fulgur
