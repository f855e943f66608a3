#include "convert/safetensors_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fp16.h"

namespace fulgur {

SafetensorsWriter::SafetensorsWriter() { metadata_["format"] = "pt"; }

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

void SafetensorsWriter::add(const std::string& name, SafetensorsDType dtype,
                            std::vector<int64_t> shape, std::span<const uint8_t> bytes) {
  FULGUR_CHECK(!name.empty() && name != "__metadata__", "safetensors writer: tensor name '",
               name, "' is reserved or empty");
  FULGUR_CHECK(!names_.contains(name), "safetensors writer: tensor '", name, "' added twice");
  uint64_t count = 1;
  for (int64_t d : shape) {
    FULGUR_CHECK(d >= 0, "safetensors writer: tensor '", name, "' has negative dimension ", d);
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t bits = count * static_cast<uint64_t>(safetensors_dtype_bits(dtype));
  FULGUR_CHECK(bits % 8 == 0 && bits / 8 == bytes.size(), "safetensors writer: tensor '", name,
               "' has ", bytes.size(), " bytes, its shape and dtype ",
               safetensors_dtype_name(dtype), " need ", bits / 8.0);
  entries_.push_back({name, dtype, std::move(shape), {bytes.begin(), bytes.end()}});
  names_.insert(name);
}

void SafetensorsWriter::add_f32(const std::string& name, std::vector<int64_t> shape,
                                std::span<const float> values, SafetensorsDType store) {
  std::vector<uint8_t> bytes;
  switch (store) {
    case SafetensorsDType::kF32:
      bytes.resize(values.size() * 4);
      if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
      break;
    case SafetensorsDType::kF16:
    case SafetensorsDType::kBF16:
      bytes.resize(values.size() * 2);
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = store == SafetensorsDType::kF16 ? f32_to_f16(values[i])
                                                           : f32_to_bf16(values[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
      break;
    default:
      fail("safetensors writer: tensor '", name, "': cannot store f32 values as ",
           safetensors_dtype_name(store), " (F32, F16 or BF16 only)");
  }
  add(name, store, std::move(shape), bytes);
}

uint64_t SafetensorsWriter::data_bytes() const {
  uint64_t total = 0;
  for (const Entry& e : entries_) total += e.bytes.size();
  return total;
}

void SafetensorsWriter::write(const std::string& path) const {
  std::vector<const Entry*> order;
  for (const Entry& e : entries_) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    const int ba = safetensors_dtype_bits(a->dtype), bb = safetensors_dtype_bits(b->dtype);
    return ba != bb ? ba > bb : a->name < b->name;
  });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const Entry* e : order) {
    header[e->name] = {{"dtype", std::string(safetensors_dtype_name(e->dtype))},
                       {"shape", e->shape},
                       {"data_offsets", {offset, offset + e->bytes.size()}}};
    offset += e->bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<uint8_t> out(8 + text.size() + offset);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);  // little-endian host
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* dst = out.data() + 8 + text.size();
  for (const Entry* e : order) {
    if (!e->bytes.empty()) std::memcpy(dst, e->bytes.data(), e->bytes.size());
    dst += e->bytes.size();
  }
  write_file_atomic(path, out);
}

void write_safetensors_index(const std::string& path,
                             const std::map<std::string, std::string>& weight_map,
                             uint64_t total_size) {
  const nlohmann::json index = {{"metadata", {{"total_size", total_size}}},
                                {"weight_map", weight_map}};
  const std::string text = index.dump(2) + "\n";
  write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string tmp = cat(path, ".tmp.", ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail("cannot create '", tmp, "': ", std::strerror(errno));
  const bool wrote = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) {
    std::remove(tmp.c_str());
    fail("cannot write '", tmp, "': ", std::strerror(wrote ? errno : err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rerr = errno;
    std::remove(tmp.c_str());
    fail("cannot rename '", tmp, "' to '", path, "': ", std::strerror(rerr));
  }
}

}  // namespace fulgur
