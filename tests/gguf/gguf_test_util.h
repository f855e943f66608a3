// Test helpers: a byte builder to craft GGUF files field by field (including invalid ones the
// writer refuses to produce), and a helper that returns the reader's error message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "scratch_dir.h"

namespace fulgur::test {

struct Bytes {
  std::vector<uint8_t> b;

  size_t size() const { return b.size(); }
  template <class T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return u32(kGgufMagic).u32(version).u64(n_tensors).u64(n_kv);
  }
  // Key + UINT32 value.
  Bytes& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  Bytes& tensor_info(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type,
                     uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) u64(n);
    return u32(type).u64(offset);
  }
  Bytes& pad(size_t alignment) {
    while (b.size() % alignment != 0) b.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
  template <class T>
  void patch(size_t pos, T v) {
    std::memcpy(b.data() + pos, &v, sizeof v);
  }
};

// The reader's error for these bytes, or "" when they parse.
inline std::string parse_error(const std::vector<uint8_t>& bytes,
                               const std::string& name = "t.gguf") {
  try {
    GgufReader reader(bytes.data(), bytes.size(), name);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// A fresh directory, removed at exit.
inline std::string make_temp_dir() { return scratch_dir("fulgur_gguf"); }

}  // namespace fulgur::test

// Expects the bytes to be rejected with a message containing every given piece.
#define EXPECT_GGUF_ERROR(bytes, ...)                            \
  do {                                                           \
    const std::string msg_ = ::fulgur::test::parse_error(bytes); \
    EXPECT_FALSE(msg_.empty()) << "file was accepted";           \
    for (const char* piece_ : {__VA_ARGS__}) {                   \
      EXPECT_NE(msg_.find(piece_), std::string::npos)            \
          << "message: " << msg_ << "\nmissing: " << piece_;     \
    }                                                            \
  } while (0)
