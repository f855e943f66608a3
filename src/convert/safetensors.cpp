#include "convert/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/fp16.h"

namespace fulgur {

namespace {

using nlohmann::json;

struct DTypeRow {
  SafetensorsDType type;
  std::string_view name;
  int bits;
  bool to_f32;
};

constexpr DTypeRow kDTypes[] = {
    {SafetensorsDType::kBool, "BOOL", 8, true},
    {SafetensorsDType::kU8, "U8", 8, true},
    {SafetensorsDType::kI8, "I8", 8, true},
    {SafetensorsDType::kI16, "I16", 16, true},
    {SafetensorsDType::kU16, "U16", 16, true},
    {SafetensorsDType::kF16, "F16", 16, true},
    {SafetensorsDType::kBF16, "BF16", 16, true},
    {SafetensorsDType::kI32, "I32", 32, true},
    {SafetensorsDType::kU32, "U32", 32, true},
    {SafetensorsDType::kF32, "F32", 32, true},
    {SafetensorsDType::kF64, "F64", 64, true},
    {SafetensorsDType::kI64, "I64", 64, true},
    {SafetensorsDType::kU64, "U64", 64, true},
    {SafetensorsDType::kC64, "C64", 64, false},
    {SafetensorsDType::kF8_E4M3, "F8_E4M3", 8, true},
    {SafetensorsDType::kF8_E5M2, "F8_E5M2", 8, true},
    {SafetensorsDType::kF8_E8M0, "F8_E8M0", 8, true},
    {SafetensorsDType::kF8_E4M3FNUZ, "F8_E4M3FNUZ", 8, false},
    {SafetensorsDType::kF8_E5M2FNUZ, "F8_E5M2FNUZ", 8, false},
    {SafetensorsDType::kF4, "F4", 4, false},
    {SafetensorsDType::kF6_E2M3, "F6_E2M3", 6, false},
    {SafetensorsDType::kF6_E3M2, "F6_E3M2", 6, false},
};

const DTypeRow& row(SafetensorsDType type) { return kDTypes[static_cast<size_t>(type)]; }

template <class T>
T load(const uint8_t* p) {  // unaligned little-endian load (x86 is little-endian)
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// float8 e4m3 "fn" (torch.float8_e4m3fn): bias 7, no infinities, S.1111.111 is NaN.
float f8_e4m3_to_f32(uint8_t x) {
  const float sign = (x & 0x80) ? -1.0f : 1.0f;
  const int exp = (x >> 3) & 0xF;
  const int man = x & 0x7;
  if (exp == 0xF && man == 0x7) return std::nanf("");
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), -9);  // man/8 * 2^-6
  return sign * std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
}

// A JSON value that must be a non-negative integer; `what` names it for the error.
uint64_t as_size(const json& v, const std::string& what) {
  FULGUR_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0),
               what, " is ", v.dump(), ", expected a non-negative integer");
  return v.get<uint64_t>();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FULGUR_CHECK(in, "cannot open '", path, "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FULGUR_CHECK(!in.bad(), "cannot read '", path, "'");
  return text;
}

}  // namespace

std::string_view safetensors_dtype_name(SafetensorsDType type) { return row(type).name; }

std::optional<SafetensorsDType> parse_safetensors_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes) {
    if (r.name == name) return r.type;
  }
  return std::nullopt;
}

int safetensors_dtype_bits(SafetensorsDType type) { return row(type).bits; }

bool safetensors_dtype_to_f32_supported(SafetensorsDType type) { return row(type).to_f32; }

int64_t SafetensorsTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated at load not to overflow
  return n;
}

void safetensors_to_f32(SafetensorsDType type, const uint8_t* src, size_t n, float* dst,
                        std::string_view what) {
  using T = SafetensorsDType;
  if (n == 0) return;  // empty tensors: dst may be null, and memcpy must not see it
  switch (type) {
    case T::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case T::kF16:
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load<uint16_t>(src + 2 * i));
      return;
    case T::kBF16:
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load<uint16_t>(src + 2 * i));
      return;
    case T::kF64:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<double>(src + 8 * i));
      return;
    case T::kF8_E4M3:
      for (size_t i = 0; i < n; ++i) dst[i] = f8_e4m3_to_f32(src[i]);
      return;
    case T::kF8_E5M2:  // the top byte of an IEEE half
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(static_cast<uint16_t>(src[i] << 8));
      return;
    case T::kF8_E8M0:  // a power-of-two scale, 0xFF = NaN
      for (size_t i = 0; i < n; ++i) {
        dst[i] = src[i] == 0xFF ? std::nanf("") : std::ldexp(1.0f, int(src[i]) - 127);
      }
      return;
    case T::kBool:
      for (size_t i = 0; i < n; ++i) dst[i] = src[i] != 0 ? 1.0f : 0.0f;
      return;
    case T::kU8:
      for (size_t i = 0; i < n; ++i) dst[i] = src[i];
      return;
    case T::kI8:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<int8_t>(src[i]);
      return;
    case T::kI16:
      for (size_t i = 0; i < n; ++i) dst[i] = load<int16_t>(src + 2 * i);
      return;
    case T::kU16:
      for (size_t i = 0; i < n; ++i) dst[i] = load<uint16_t>(src + 2 * i);
      return;
    case T::kI32:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<int32_t>(src + 4 * i));
      return;
    case T::kU32:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<uint32_t>(src + 4 * i));
      return;
    case T::kI64:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<int64_t>(src + 8 * i));
      return;
    case T::kU64:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<uint64_t>(src + 8 * i));
      return;
    default:
      break;
  }
  fail(what, ": dtype ", safetensors_dtype_name(type), " cannot be converted to f32");
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path), name_(path) {
  parse(file_.data(), file_.size());
}

SafetensorsFile::SafetensorsFile(const uint8_t* data, size_t size, std::string name)
    : name_(std::move(name)) {
  parse(data, size);
}

void SafetensorsFile::parse(const uint8_t* data, size_t size) {
  const std::string& path = name_;
  FULGUR_CHECK(size >= 8, path, ": file is ", size,
               " bytes, too small for the 8-byte safetensors header length");
  const uint64_t n = load<uint64_t>(data);
  FULGUR_CHECK(n <= kMaxHeaderBytes, path, ": header length ", n, " exceeds the ",
               kMaxHeaderBytes, "-byte limit (not a safetensors file?)");
  FULGUR_CHECK(n <= size - 8, path, ": header length ", n, " runs past the end of the file (",
               size, " bytes)");
  header_bytes_ = static_cast<size_t>(n);
  const char* text = reinterpret_cast<const char*>(data + 8);
  json header;
  try {
    header = json::parse(text, text + header_bytes_);
  } catch (const json::exception& e) {
    fail(path, ": header is not valid JSON: ", e.what());
  }
  FULGUR_CHECK(header.is_object(), path, ": header is a JSON ", header.type_name(),
               ", expected an object");

  const uint8_t* buffer = data + 8 + header_bytes_;
  const size_t buffer_bytes = size - 8 - header_bytes_;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      FULGUR_CHECK(entry.is_object(), path, ": __metadata__ is a JSON ", entry.type_name(),
                   ", expected an object of strings");
      for (const auto& [key, value] : entry.items()) {
        FULGUR_CHECK(value.is_string(), path, ": __metadata__ field '", key, "' is a JSON ",
                     value.type_name(), ", expected a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = cat(path, ": tensor '", name, "'");
    FULGUR_CHECK(entry.is_object(), where, " is a JSON ", entry.type_name(),
                 ", expected an object");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      FULGUR_CHECK(entry.contains(field), where, " has no '", field, "'");
    }
    const json& dtype = entry["dtype"];
    FULGUR_CHECK(dtype.is_string(), where, ": dtype is ", dtype.dump(), ", expected a string");
    const auto type = parse_safetensors_dtype(dtype.get<std::string>());
    FULGUR_CHECK(type.has_value(), where, ": unknown dtype '", dtype.get<std::string>(), "'");

    const json& shape = entry["shape"];
    FULGUR_CHECK(shape.is_array(), where, ": shape is ", shape.dump(), ", expected an array");
    SafetensorsTensor t{name, *type, {}, nullptr, 0, path};
    uint64_t count = 1;
    for (const json& dim : shape) {
      const uint64_t d = as_size(dim, cat(where, ": shape dimension"));
      FULGUR_CHECK(d <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(count, d, &count), where,
                   ": shape ", shape.dump(), " has too many elements");
      t.shape.push_back(static_cast<int64_t>(d));
    }
    uint64_t bits = 0;
    FULGUR_CHECK(count <= uint64_t(INT64_MAX) &&
                     !__builtin_mul_overflow(count, uint64_t(safetensors_dtype_bits(*type)), &bits),
                 where, ": shape ", shape.dump(), " has too many elements");
    FULGUR_CHECK(bits % 8 == 0, where, ": ", count, " elements of ", dtype.get<std::string>(),
                 " do not fill whole bytes");

    const json& offsets = entry["data_offsets"];
    FULGUR_CHECK(offsets.is_array() && offsets.size() == 2, where, ": data_offsets is ",
                 offsets.dump(), ", expected [begin, end]");
    const uint64_t begin = as_size(offsets[0], cat(where, ": data_offsets begin"));
    const uint64_t end = as_size(offsets[1], cat(where, ": data_offsets end"));
    FULGUR_CHECK(begin <= end, where, ": data_offsets [", begin, ", ", end,
                 "] ends before it begins");
    FULGUR_CHECK(end <= buffer_bytes, where, ": data_offsets [", begin, ", ", end,
                 "] run past the end of the data (", buffer_bytes, " bytes)");
    FULGUR_CHECK(end - begin == bits / 8, where, ": data_offsets [", begin, ", ", end,
                 "] span ", end - begin, " bytes but shape ", shape.dump(), " of ",
                 dtype.get<std::string>(), " needs ", bits / 8);
    t.data = buffer + begin;
    t.bytes = static_cast<size_t>(end - begin);
    tensors_.push_back(std::move(t));
  }

  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) {
    return a.data != b.data ? a.data < b.data : a.bytes < b.bytes;
  });
  // Overlap check in physical order; empty tensors occupy nothing and cannot overlap.
  const SafetensorsTensor* prev = nullptr;
  for (const SafetensorsTensor& t : tensors_) {
    if (t.bytes == 0) continue;
    FULGUR_CHECK(prev == nullptr || t.data >= prev->data + prev->bytes, path, ": tensor '",
                 t.name, "' overlaps tensor '", (prev ? prev->name : ""), "'");
    prev = &t;
  }
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsTensor& SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsTensor* t = find(name);
  FULGUR_CHECK(t != nullptr, path(), ": no tensor '", name, "'");
  return *t;
}

// --- Checkpoint ---

Checkpoint::Checkpoint(const std::string& path) : source_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  fs::path index_path;
  if (fs::is_directory(p, ec)) {
    dir_ = path;
    if (fs::exists(p / "model.safetensors.index.json", ec)) {
      index_path = p / "model.safetensors.index.json";
    } else if (fs::exists(p / "model.safetensors", ec)) {
      add_file((p / "model.safetensors").string());
    } else {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (e.path().extension() == ".safetensors") found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      FULGUR_CHECK(!found.empty(), path,
                   ": no model.safetensors, model.safetensors.index.json or *.safetensors "
                   "in this directory");
      for (const std::string& f : found) add_file(f);
    }
  } else {
    FULGUR_CHECK(fs::exists(p, ec), path, ": no such file or directory");
    dir_ = p.parent_path().empty() ? "." : p.parent_path().string();
    if (p.extension() == ".json") {
      index_path = p;
    } else {
      add_file(path);
    }
  }
  if (index_path.empty()) return;

  // Sharded: the index's weight_map says which shard holds each tensor.
  const std::string ip = index_path.string();
  source_ = ip;
  json index;
  try {
    index = json::parse(read_text(ip));
  } catch (const json::exception& e) {
    fail(ip, ": not valid JSON: ", e.what());
  }
  FULGUR_CHECK(index.is_object() && index.contains("weight_map"), ip,
               ": expected an object with a 'weight_map'");
  const json& map = index["weight_map"];
  FULGUR_CHECK(map.is_object(), ip, ": weight_map is a JSON ", map.type_name(),
               ", expected an object");
  std::map<std::string, const SafetensorsFile*> shards;
  for (const auto& [name, shard] : map.items()) {
    FULGUR_CHECK(shard.is_string(), ip, ": weight_map['", name, "'] is ", shard.dump(),
                 ", expected a file name");
    const std::string file = shard.get<std::string>();
    const fs::path rel(file);
    FULGUR_CHECK(!file.empty() && rel.is_relative() &&
                     std::find(rel.begin(), rel.end(), fs::path("..")) == rel.end(),
                 ip, ": weight_map['", name, "'] = '", file,
                 "' is not a file name inside the checkpoint directory");
    auto it = shards.find(file);
    if (it == shards.end()) {
      files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir_) / rel).string()));
      it = shards.emplace(file, files_.back().get()).first;
    }
    const SafetensorsTensor* t = it->second->find(name);
    FULGUR_CHECK(t != nullptr, ip, ": tensor '", name, "' is mapped to '", file,
                 "', which does not contain it");
    by_name_.emplace(name, t);
  }
}

void Checkpoint::add_file(const std::string& path) {
  files_.push_back(std::make_unique<SafetensorsFile>(path));
  for (const SafetensorsTensor& t : files_.back()->tensors()) {
    const auto [it, fresh] = by_name_.emplace(t.name, &t);
    FULGUR_CHECK(fresh, path, ": tensor '", t.name, "' also appears in ", it->second->file);
  }
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(name);
  return out;
}

const SafetensorsTensor* Checkpoint::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const SafetensorsTensor& Checkpoint::tensor(std::string_view name) const {
  const SafetensorsTensor* t = find(name);
  FULGUR_CHECK(t != nullptr, source_, ": no tensor '", name, "'");
  return *t;
}

std::vector<float> Checkpoint::to_f32(std::string_view name) const {
  const SafetensorsTensor& t = tensor(name);
  std::vector<float> out(static_cast<size_t>(t.n_elements()));  // [n_elements] HF order
  to_f32(name, out);
  return out;
}

void Checkpoint::to_f32(std::string_view name, std::span<float> out) const {
  const SafetensorsTensor& t = tensor(name);
  const auto n = static_cast<size_t>(t.n_elements());
  FULGUR_CHECK(out.size() == n, t.file, ": tensor '", name, "' has ", n,
               " elements, the output buffer ", out.size());
  safetensors_to_f32(t.dtype, t.data, n, out.data(), cat(t.file, ": tensor '", name, "'"));
}

std::map<std::string, std::string> Checkpoint::metadata() const {
  std::map<std::string, std::string> out;
  for (const auto& f : files_) out.insert(f->metadata().begin(), f->metadata().end());
  return out;
}

}  // namespace fulgur
