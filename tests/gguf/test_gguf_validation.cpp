// One test per validation rule of the reader: a valid file is built field by field, then exactly
// one field is made invalid, and the error must name the field and the values.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_test_util.h"
#include "gguf/gguf_writer.h"

namespace fulgur {
namespace {

using test::Bytes;
using test::parse_error;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;

// A small file: general.alignment, one string key, tensors 'a' (f32 32x2 = 256 bytes at 0) and
// 'b' (q8_0 32 = 34 bytes at 256), and exactly the data they need.
struct Spec {
  uint32_t version = 3;
  bool with_alignment = true;
  uint32_t alignment = 32;
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    uint64_t offset;
  };
  std::vector<Tensor> tensors = {{"a", {32, 2}, kF32, 0}, {"b", {32}, kQ8_0, 256}};
  size_t data_bytes = 256 + 34;
};

std::vector<uint8_t> build(const Spec& s) {
  Bytes f;
  f.header(s.version, s.tensors.size(), s.with_alignment ? 2 : 1);
  if (s.with_alignment) f.kv_u32("general.alignment", s.alignment);
  f.str("general.name").u32(8).str("tiny");
  for (const Spec::Tensor& t : s.tensors) f.tensor_info(t.name, t.ne, t.type, t.offset);
  f.pad(s.with_alignment && s.alignment != 0 ? s.alignment : 32);
  f.zeros(s.data_bytes);
  return f.b;
}

// A file with the given metadata pairs (already encoded) and no tensors.
std::vector<uint8_t> with_kvs(uint64_t n_kv, const Bytes& kvs) {
  Bytes f;
  f.header(3, 0, n_kv);
  f.b.insert(f.b.end(), kvs.b.begin(), kvs.b.end());
  return f.b;
}

TEST(GgufValidation, BaseFileIsValid) {
  const std::vector<uint8_t> bytes = build(Spec{});
  const GgufReader r(bytes.data(), bytes.size(), "t.gguf");
  EXPECT_EQ(r.get_string("general.name"), "tiny");
  ASSERT_EQ(r.tensors().size(), 2u);
  EXPECT_EQ(r.tensor("a").nbytes, 256u);
  EXPECT_EQ(r.tensor("b").nbytes, 34u);
  EXPECT_EQ(r.tensor("b").type, DType::kQ8_0);
  EXPECT_EQ(r.data_offset() + 290, bytes.size());
}

TEST(GgufValidation, Magic) {
  std::vector<uint8_t> bytes = build(Spec{});
  bytes[0] = 'X';
  EXPECT_GGUF_ERROR(bytes, "t.gguf", "not a GGUF file", "magic");
  EXPECT_GGUF_ERROR(std::vector<uint8_t>{}, "t.gguf", "truncated reading magic");
}

TEST(GgufValidation, Versions) {
  Spec s;
  s.version = 1;
  EXPECT_GGUF_ERROR(build(s), "version 1", "expected 2 or 3");
  s.version = 4;
  EXPECT_GGUF_ERROR(build(s), "version 4");
  s.version = 0x03000000;  // version 3 written big-endian
  EXPECT_GGUF_ERROR(build(s), "big-endian");
  s.version = 2;
  EXPECT_EQ(parse_error(build(s)), "");
}

TEST(GgufValidation, LyingCountsAreBoundedBeforeAllocation) {
  std::vector<uint8_t> bytes = build(Spec{});
  Bytes f{bytes};
  f.patch<uint64_t>(8, uint64_t{1} << 60);
  EXPECT_GGUF_ERROR(f.b, "tensor count 1152921504606846976");
  f.b = bytes;
  f.patch<uint64_t>(16, uint64_t{1} << 62);
  EXPECT_GGUF_ERROR(f.b, "key/value count 4611686018427387904");
  f.b = bytes;
  f.patch<uint64_t>(16, 3);  // one more pair than present: runs into the tensor infos
  EXPECT_FALSE(parse_error(f.b).empty());
  f.b = bytes;
  f.patch<uint64_t>(8, 3);  // one more tensor than present
  EXPECT_FALSE(parse_error(f.b).empty());
}

TEST(GgufValidation, StringLengthBeyondFile) {
  std::vector<uint8_t> bytes = build(Spec{});
  Bytes f{bytes};
  f.patch<uint64_t>(24, uint64_t{1} << 62);  // length of the first key
  EXPECT_GGUF_ERROR(f.b, "key #0 length 4611686018427387904", "exceeds");
  Bytes kv;
  kv.str("k").u32(8).u64(1000).str("short");  // a STRING value claiming 1000 bytes
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key 'k' length 1000", "exceeds");
}

TEST(GgufValidation, EmptyKey) {
  Bytes kv;
  kv.str("").u32(4).u32(1);
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key #0 is empty");
}

TEST(GgufValidation, UnknownValueType) {
  Bytes kv;
  kv.str("weird").u32(13).u32(0);
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key 'weird'", "unknown value type 13");
}

TEST(GgufValidation, NestedArray) {
  Bytes kv;
  kv.str("nest").u32(9).u32(9).u64(1).u32(4).u64(1).u32(5);
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key 'nest'", "nested arrays");
}

TEST(GgufValidation, UnknownArrayElementType) {
  Bytes kv;
  kv.str("arr").u32(9).u32(77).u64(0);
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key 'arr'", "unknown array element type 77");
}

TEST(GgufValidation, ArrayLengthBeyondFile) {
  Bytes kv;
  kv.str("arr").u32(9).u32(4).u64(uint64_t{1} << 40).u32(1);
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key 'arr'", "array of 1099511627776 UINT32");
  Bytes strings;  // string array: each element needs at least its 8-byte length
  strings.str("tok").u32(9).u32(8).u64(1000).str("a");
  EXPECT_GGUF_ERROR(with_kvs(1, strings), "key 'tok'", "array of 1000 STRING");
  Bytes elem;  // a plausible count, but element 1's length is a lie
  elem.str("tok").u32(9).u32(8).u64(2).str("a").u64(999).u64(0);
  EXPECT_GGUF_ERROR(with_kvs(1, elem), "key 'tok' element 1 length 999");
}

TEST(GgufValidation, BoolValues) {
  Bytes kv;
  kv.str("flag").u32(7).u8(2);
  EXPECT_GGUF_ERROR(with_kvs(1, kv), "key 'flag'", "BOOL byte is 2");
  Bytes arr;
  arr.str("flags").u32(9).u32(7).u64(3).u8(1).u8(0).u8(255);
  EXPECT_GGUF_ERROR(with_kvs(1, arr), "key 'flags' element 2", "BOOL byte is 255");
}

TEST(GgufValidation, DuplicateKey) {
  Bytes kv;
  kv.kv_u32("dup", 1).kv_u32("other", 2).kv_u32("dup", 3);
  EXPECT_GGUF_ERROR(with_kvs(3, kv), "duplicate key 'dup'", "pair #2");
}

TEST(GgufValidation, Alignment) {
  Bytes wrong_type;
  wrong_type.str("general.alignment").u32(5).u32(64);  // INT32
  EXPECT_GGUF_ERROR(with_kvs(1, wrong_type), "key 'general.alignment'",
                    "must be UINT32, got INT32");
  Spec s;
  s.alignment = 0;
  EXPECT_GGUF_ERROR(build(s), "key 'general.alignment'", "value 0");
  s.alignment = 48;
  EXPECT_GGUF_ERROR(build(s), "key 'general.alignment'", "value 48", "power of two");
  s.alignment = 8;
  EXPECT_EQ(parse_error(build(s)), "");
  s.with_alignment = false;  // default 32
  EXPECT_EQ(parse_error(build(s)), "");
}

TEST(GgufValidation, TensorNames) {
  Spec s;
  s.tensors[1].name = "a";
  EXPECT_GGUF_ERROR(build(s), "duplicate tensor name 'a'", "tensor #1");
  s.tensors[1].name = "";
  EXPECT_GGUF_ERROR(build(s), "tensor #1 has an empty name");
  s.tensors[1].name = std::string(64, 'x');
  EXPECT_GGUF_ERROR(build(s), "name is 64 bytes, at most 63");
  s.tensors[1].name = std::string(63, 'x');
  EXPECT_EQ(parse_error(build(s)), "");
}

TEST(GgufValidation, NDims) {
  Spec s;
  s.tensors[0].ne = {};
  EXPECT_GGUF_ERROR(build(s), "tensor 'a'", "n_dims is 0, expected 1..4");
  s.tensors[0].ne = {32, 2, 1, 1, 1};
  EXPECT_GGUF_ERROR(build(s), "tensor 'a'", "n_dims is 5");
  s.tensors[0].ne = {32, 2, 1, 1};
  EXPECT_EQ(parse_error(build(s)), "");
}

TEST(GgufValidation, Dims) {
  Spec s;
  s.tensors[0].ne = {32, 0};
  EXPECT_GGUF_ERROR(build(s), "tensor 'a' dim 1 is 0");
  s.tensors[0].ne = {uint64_t{1} << 63, 1};
  EXPECT_GGUF_ERROR(build(s), "tensor 'a' dim 0 is 9223372036854775808");
  s.tensors[0].ne = {uint64_t{1} << 32, uint64_t{1} << 32};
  EXPECT_GGUF_ERROR(build(s), "tensor 'a' dim 1", "overflow");
  s.tensors[0].ne = {uint64_t{1} << 61, 2};  // 2^62 f32 elements: the byte count overflows
  EXPECT_GGUF_ERROR(build(s), "tensor 'a'", "byte size", "overflows");
  s = Spec{};
  s.tensors[1].ne = {uint64_t{INT64_MAX} / 32 * 32};  // fits as elements, not as q8_0 bytes
  EXPECT_GGUF_ERROR(build(s), "tensor 'b'", "overflows");
}

TEST(GgufValidation, TensorType) {
  Spec s;
  s.tensors[0].type = 4;  // removed Q4_2
  EXPECT_GGUF_ERROR(build(s), "tensor 'a'", "unknown tensor type id 4");
  s.tensors[0].type = 0xFFFFFFFF;
  EXPECT_GGUF_ERROR(build(s), "tensor 'a'", "unknown tensor type id 4294967295");
}

TEST(GgufValidation, BlockSize) {
  Spec s;
  s.tensors[1].ne = {48};
  EXPECT_GGUF_ERROR(build(s), "tensor 'b' dim 0 is 48", "block size 32", "q8_0");
}

TEST(GgufValidation, OffsetAlignment) {
  Spec s;
  s.tensors[1].offset = 260;
  EXPECT_GGUF_ERROR(build(s), "tensor 'b'", "offset 260", "alignment 32");
}

TEST(GgufValidation, OffsetsInBounds) {
  Spec s;
  s.tensors[1].offset = uint64_t{1} << 50;
  EXPECT_GGUF_ERROR(build(s), "tensor 'b'", "past the end");
  s = Spec{};
  s.data_bytes = 256 + 33;  // one byte short for 'b'
  EXPECT_GGUF_ERROR(build(s), "tensor 'b'", "[256, 256 + 34)", "289 bytes");
  s.data_bytes = 0;
  EXPECT_GGUF_ERROR(build(s), "tensor 'a'", "past the end");
}

TEST(GgufValidation, Overlap) {
  Spec s;
  s.tensors[1].offset = 224;  // inside 'a' = [0, 256)
  s.data_bytes = 512;
  EXPECT_GGUF_ERROR(build(s), "tensor 'b' at offset 224 overlaps tensor 'a' at [0, 256)");
  s.tensors[0].offset = 256;  // 'a' after 'b' in the file, still overlapping
  s.tensors[1].offset = 0;
  s.tensors[1].ne = {32 * 8};  // 272 bytes
  s.data_bytes = 1024;
  EXPECT_GGUF_ERROR(build(s), "tensor 'a' at offset 256 overlaps tensor 'b' at [0, 272)");
}

TEST(GgufValidation, ErrorNamesThePath) {
  std::vector<uint8_t> bytes = build(Spec{});
  bytes[4] = 9;
  const std::string path = test::make_temp_dir() + "/bad.gguf";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  try {
    GgufReader r(path);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("file '" + path + "': GGUF version 9"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(GgufReader(path + ".missing"), Error);
}

TEST(GgufValidation, EveryTruncationIsAnError) {
  const std::vector<uint8_t> bytes = build(Spec{});
  ASSERT_EQ(parse_error(bytes), "");
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A fresh exact-size heap copy, so ASan builds catch any read past the end.
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(parse_error(cut), "") << "truncated to " << n << " bytes was accepted";
  }
}

// Everything the reader hands out, read once (what the fuzzer does).
void touch_everything(const GgufReader& r) {
  size_t sink = 0;
  for (const GgufKv& kv : r.metadata()) {
    sink += kv.value.to_string(4).size();
    for (size_t i = 0; kv.value.is_array() && i < kv.value.size(); ++i) {
      sink += kv.value.element(i).to_string().size();
    }
  }
  for (const GgufTensorInfo& t : r.tensors()) sink += t.data[0] + t.data[t.nbytes - 1];
  EXPECT_GE(sink, 0u);
}

GgufWriter rich_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  w.set_alignment(64);
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "<|x|>"});
  w.set_array<int32_t>("tokenizer.ggml.token_type", {1, 1, 3});
  w.set_array<float>("tokenizer.ggml.scores", {0.f, -1.f, 2.f});
  w.set_array<bool>("flags", {true, false});
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_f64("x", 1.0);
  w.add_tensor("token_embd.weight", DType::kQ8_0, {32, 3}, std::vector<uint8_t>(102, 1));
  w.add_tensor("output_norm.weight", DType::kF32, {32}, std::vector<uint8_t>(128, 2));
  w.add_tensor("blk.0.attn_q.weight", DType::kQ4_K, {256, 2}, std::vector<uint8_t>(288, 3));
  return w;
}

TEST(GgufValidation, WriterFileTruncations) {
  const std::vector<uint8_t> bytes = rich_writer().to_bytes();
  const GgufReader full(bytes);
  const GgufTensorInfo& last = full.tensors().back();
  const size_t needed = full.data_offset() + last.offset + last.nbytes;
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string msg = parse_error(cut);
    if (n < needed) {
      EXPECT_NE(msg, "") << "truncated to " << n;
    } else {
      EXPECT_EQ(msg, "") << "only padding was cut at " << n;
    }
  }
}

TEST(GgufValidation, RandomMutationsNeverCrash) {
  const std::vector<uint8_t> bytes = rich_writer().to_bytes();
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> m = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t pos = rng() % m.size();
      // Half the time a random byte, else a value that often makes lengths huge or zero.
      const uint8_t choices[] = {0x00, 0xFF, 0x80, 0x7F, 0x01, 0x40};
      m[pos] = rng() % 2 ? static_cast<uint8_t>(rng()) : choices[rng() % 6];
    }
    try {
      const GgufReader r(m.data(), m.size());
      touch_everything(r);
      ++accepted;
    } catch (const Error&) {
      // rejected with a message: fine
    }
  }
  EXPECT_GT(accepted, 0);  // mutations inside tensor data stay valid
}

}  // namespace
}  // namespace fulgur
