// Writer -> reader round trips: every value type, many tensor types, several alignments, files
// and memory, streamed tensors, typed getters and the writer's own validation.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_test_util.h"
#include "gguf/gguf_writer.h"

namespace fulgur {
namespace {

using test::make_temp_dir;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

size_t count_files(const std::string& dir) {
  size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
  }
  ::closedir(d);
  return n;
}

// One key of every type, including every array element type and edge values.
GgufWriter all_types_writer() {
  GgufWriter w;
  w.set_u8("t.u8", 250);
  w.set_i8("t.i8", -120);
  w.set_u16("t.u16", 65000);
  w.set_i16("t.i16", -32000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_f32("t.f32", 1.5f);
  w.set_bool("t.bool_true", true);
  w.set_bool("t.bool_false", false);
  w.set_string("t.string", "héllo\nworld");
  w.set_string("t.empty_string", "");
  w.set_u64("t.u64", std::numeric_limits<uint64_t>::max());
  w.set_i64("t.i64", std::numeric_limits<int64_t>::min());
  w.set_f64("t.f64", -2.25e300);
  w.set_array<uint8_t>("a.u8", {0, 1, 255});
  w.set_array<int8_t>("a.i8", {-128, 0, 127});
  w.set_array<uint16_t>("a.u16", {1, 65535});
  w.set_array<int16_t>("a.i16", {-32768, 32767});
  w.set_array<uint32_t>("a.u32", {7, 8, 9});
  w.set_array<int32_t>("a.i32", {-1, 1, 3, 6});
  w.set_array<float>("a.f32", {0.5f, -1.0f, std::numeric_limits<float>::infinity()});
  w.set_array<bool>("a.bool", {true, false, true});
  w.set_array<uint64_t>("a.u64", {1ull << 63});
  w.set_array<int64_t>("a.i64", {-(1ll << 62), 5});
  w.set_array<double>("a.f64", {3.25});
  w.set_array<int32_t>("a.empty", {});
  w.set_string_array("a.strings", {"a", "", "ĉ d", std::string(300, 'x')});
  w.set_string_array("a.empty_strings", {});
  return w;
}

TEST(GgufRoundTrip, EveryValueType) {
  const GgufWriter w = all_types_writer();
  const GgufReader r(w.to_bytes(), "mem");
  ASSERT_EQ(r.metadata().size(), w.metadata().size());
  for (size_t i = 0; i < w.metadata().size(); ++i) {
    EXPECT_EQ(r.metadata()[i].key, w.metadata()[i].key);
    EXPECT_TRUE(r.metadata()[i].value == w.metadata()[i].value) << w.metadata()[i].key;
  }
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_TRUE(r.tensors().empty());
  EXPECT_EQ(r.get<uint8_t>("t.u8"), 250);
  EXPECT_EQ(r.get_i64("t.i8"), -120);
  EXPECT_EQ(r.get_u32("t.u16"), 65000u);
  EXPECT_EQ(r.get_i32("t.i16"), -32000);
  EXPECT_EQ(r.get_u32("t.u32"), 4000000000u);
  EXPECT_EQ(r.get_i32("t.i32"), -2000000000);
  EXPECT_EQ(r.get_f32("t.f32"), 1.5f);
  EXPECT_TRUE(r.get_bool("t.bool_true"));
  EXPECT_FALSE(r.get_bool("t.bool_false"));
  EXPECT_EQ(r.get_string("t.string"), "héllo\nworld");
  EXPECT_EQ(r.get_string("t.empty_string"), "");
  EXPECT_EQ(r.get_u64("t.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.get_i64("t.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.get_f64("t.f64"), -2.25e300);
  EXPECT_EQ(r.get_array<uint8_t>("a.u8"), (std::vector<uint8_t>{0, 1, 255}));
  EXPECT_EQ(r.get_array<int8_t>("a.i8"), (std::vector<int8_t>{-128, 0, 127}));
  EXPECT_EQ(r.get_array<uint16_t>("a.u16"), (std::vector<uint16_t>{1, 65535}));
  EXPECT_EQ(r.get_array<int16_t>("a.i16"), (std::vector<int16_t>{-32768, 32767}));
  EXPECT_EQ(r.get_array<uint32_t>("a.u32"), (std::vector<uint32_t>{7, 8, 9}));
  EXPECT_EQ(r.get_array<int32_t>("a.i32"), (std::vector<int32_t>{-1, 1, 3, 6}));
  const auto f = r.get_array<float>("a.f32");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0], 0.5f);
  EXPECT_TRUE(std::isinf(f[2]));
  EXPECT_EQ(r.get_array<bool>("a.bool"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(r.get_array<uint64_t>("a.u64"), (std::vector<uint64_t>{1ull << 63}));
  EXPECT_EQ(r.get_array<int64_t>("a.i64"), (std::vector<int64_t>{-(1ll << 62), 5}));
  EXPECT_EQ(r.get_array<double>("a.f64"), (std::vector<double>{3.25}));
  EXPECT_TRUE(r.get_array<int32_t>("a.empty").empty());
  EXPECT_EQ(r.get_string_array("a.strings"),
            (std::vector<std::string>{"a", "", "ĉ d", std::string(300, 'x')}));
  EXPECT_TRUE(r.get_string_array("a.empty_strings").empty());
  EXPECT_EQ(r.get("a.strings").type_name(), "ARRAY[STRING]");
  EXPECT_EQ(r.get("a.i32").element(2).get<int32_t>(), 3);
  EXPECT_EQ(r.get("a.strings").element(2).get_string(), "ĉ d");
}

TEST(GgufRoundTrip, VersionTwoIsAccepted) {
  std::vector<uint8_t> bytes = all_types_writer().to_bytes();
  bytes[4] = 2;  // v2 has the same layout as v3 for little-endian files
  const GgufReader r(std::move(bytes));
  EXPECT_EQ(r.version(), 2u);
  EXPECT_EQ(r.get_string("t.string"), "héllo\nworld");
}

TEST(GgufRoundTrip, ToStringAbbreviatesAndEscapes) {
  const GgufWriter w = all_types_writer();
  const GgufReader r(w.to_bytes());
  EXPECT_EQ(r.get("a.i32").to_string(2), "[-1, 1, ...]");
  EXPECT_EQ(r.get("a.u8").to_string(), "[0, 1, 255]");
  EXPECT_EQ(r.get("t.string").to_string(), "\"héllo\\nworld\"");
  EXPECT_EQ(r.get("t.bool_true").to_string(), "true");
  EXPECT_EQ(r.get("t.i64").to_string(), "-9223372036854775808");
  EXPECT_EQ(r.get("a.empty").to_string(), "[]");
}

struct TensorCase {
  DType type;
  std::vector<int64_t> shape;
};

const std::vector<TensorCase>& tensor_cases() {
  static const std::vector<TensorCase> cases = {
      {DType::kF32, {7}},          {DType::kF16, {5, 3}},      {DType::kBF16, {4, 2, 3}},
      {DType::kQ4_0, {64, 3}},     {DType::kQ4_1, {32, 1, 2}}, {DType::kQ5_0, {32, 2}},
      {DType::kQ5_1, {96}},        {DType::kQ8_0, {32, 5}},    {DType::kQ2_K, {256, 2}},
      {DType::kQ3_K, {256}},       {DType::kQ4_K, {512, 3}},   {DType::kQ5_K, {256, 1, 1, 2}},
      {DType::kQ6_K, {256, 2}},    {DType::kIQ4_NL, {32, 3}},  {DType::kIQ4_XS, {256}},
      {DType::kIQ2_XXS, {256}},    {DType::kI8, {3, 3}},       {DType::kI16, {2}},
      {DType::kI32, {1, 1, 1, 1}}, {DType::kI64, {2, 2}},      {DType::kF64, {3}},
      {DType::kMXFP4, {64, 2}},    {DType::kNVFP4, {64, 3}},   {DType::kTQ2_0, {256}},
  };
  return cases;
}

GgufWriter tensors_writer(uint32_t alignment, std::vector<std::vector<uint8_t>>& payloads) {
  GgufWriter w;
  w.set_string("general.architecture", "test");
  if (alignment != kGgufDefaultAlignment) w.set_alignment(alignment);
  payloads.clear();
  uint32_t seed = 1;
  for (const TensorCase& c : tensor_cases()) {
    const uint64_t n = GgufWriter::tensor_nbytes(c.type, c.shape);
    payloads.push_back(random_bytes(n, seed++));
    w.add_tensor(cat("t.", dtype_name(c.type)), c.type, c.shape, payloads.back());
  }
  return w;
}

void expect_tensors(const GgufReader& r, uint32_t alignment,
                    const std::vector<std::vector<uint8_t>>& payloads) {
  ASSERT_EQ(r.tensors().size(), tensor_cases().size());
  EXPECT_EQ(r.alignment(), alignment);
  EXPECT_EQ(r.data_offset() % alignment, 0u);
  for (size_t i = 0; i < tensor_cases().size(); ++i) {
    const TensorCase& c = tensor_cases()[i];
    const GgufTensorInfo& t = r.tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(&r.tensor(t.name), &t);
    EXPECT_EQ(t.type, c.type);
    EXPECT_EQ(t.shape(), c.shape);
    EXPECT_EQ(t.n_dims, c.shape.size());
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    EXPECT_EQ(t.n_elements(), n);
    EXPECT_EQ(t.offset % alignment, 0u);
    ASSERT_EQ(t.nbytes, payloads[i].size());
    EXPECT_EQ(t.data, r.file_data() + r.data_offset() + t.offset);
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes), payloads[i]);
  }
}

TEST(GgufRoundTrip, TensorsAtSeveralAlignments) {
  for (uint32_t alignment : {1u, 2u, 8u, 32u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    std::vector<std::vector<uint8_t>> payloads;
    const GgufWriter w = tensors_writer(alignment, payloads);
    const GgufReader r(w.to_bytes());
    expect_tensors(r, alignment, payloads);
    if (alignment != kGgufDefaultAlignment) {
      EXPECT_EQ(r.get_u32("general.alignment"), alignment);
    }
  }
}

TEST(GgufRoundTrip, FileWriteAndMmapRead) {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/model.gguf";
  std::vector<std::vector<uint8_t>> payloads;
  const GgufWriter w = tensors_writer(64, payloads);
  w.write(path);
  EXPECT_EQ(count_files(dir), 1u);  // the temporary file was renamed away
  const GgufReader r(path);
  EXPECT_EQ(r.name(), path);
  expect_tensors(r, 64, payloads);
  EXPECT_EQ(std::vector<uint8_t>(r.file_data(), r.file_data() + r.file_size()), w.to_bytes());
  GgufReader moved = GgufReader(path);
  const GgufReader taken = std::move(moved);
  expect_tensors(taken, 64, payloads);
}

TEST(GgufRoundTrip, StreamedTensorsInPieces) {
  const std::vector<uint8_t> a = random_bytes(GgufWriter::tensor_nbytes(DType::kQ8_0, {64, 9}), 7);
  GgufWriter w;
  int calls = 0;
  w.add_tensor_streamed("a", DType::kQ8_0, {64, 9}, [&](const GgufEmit& emit) {
    ++calls;
    for (size_t row = 0; row < 9; ++row) emit(a.data() + row * 68, 68);  // one row at a time
  });
  w.add_tensor("b", DType::kF32, {3}, std::vector<uint8_t>(12, 0xAB));
  const std::string path = make_temp_dir() + "/s.gguf";
  w.write(path);
  EXPECT_EQ(calls, 1);
  const GgufReader r(path);
  const GgufTensorInfo& t = r.tensor("a");
  EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes), a);
  EXPECT_EQ(r.tensor("b").data[11], 0xAB);
}

TEST(GgufWriterErrors, FailedWriteLeavesNothingBehind) {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/out.gguf";
  GgufWriter good;
  good.set_u32("k", 1);
  good.write(path);  // an older file that must survive a failed rewrite

  for (int mode = 0; mode < 3; ++mode) {
    GgufWriter w;
    w.set_u32("k", 2);
    w.add_tensor_streamed("t", DType::kF32, {4}, [mode](const GgufEmit& emit) {
      const uint8_t buf[20] = {};
      if (mode == 0) emit(buf, 8);   // too short
      if (mode == 1) emit(buf, 20);  // too long
      if (mode == 2) fail("quantizer exploded");
    });
    try {
      w.write(path);
      ADD_FAILURE() << "mode " << mode << " did not throw";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_TRUE(msg.find("tensor 't'") != std::string::npos ||
                  msg.find("exploded") != std::string::npos)
          << msg;
    }
    EXPECT_EQ(count_files(dir), 1u) << "temporary file left behind, mode " << mode;
    EXPECT_EQ(GgufReader(path).get_u32("k"), 1u);
  }
  EXPECT_THROW(good.write(dir + "/no/such/dir/x.gguf"), Error);
  EXPECT_FALSE(file_exists(dir + "/no"));
}

TEST(GgufWriterErrors, RejectsInvalidInput) {
  GgufWriter w;
  EXPECT_THROW(w.set_u32("", 1), Error);
  EXPECT_THROW(w.set_alignment(0), Error);
  EXPECT_THROW(w.set_alignment(48), Error);
  EXPECT_THROW(w.set_i32("general.alignment", 64), Error);
  EXPECT_EQ(w.alignment(), 32u);
  w.set_alignment(16);
  EXPECT_EQ(w.alignment(), 16u);
  w.remove("general.alignment");
  EXPECT_EQ(w.alignment(), 32u);
  EXPECT_EQ(w.find("general.alignment"), nullptr);

  const std::vector<uint8_t> four(16);
  EXPECT_THROW(w.add_tensor("", DType::kF32, {4}, four), Error);
  EXPECT_THROW(w.add_tensor(std::string(64, 'n'), DType::kF32, {4}, four), Error);
  EXPECT_NO_THROW(w.add_tensor(std::string(63, 'n'), DType::kF32, {4}, four));
  EXPECT_THROW(w.add_tensor(std::string(63, 'n'), DType::kF32, {4}, four), Error);  // duplicate
  EXPECT_THROW(w.add_tensor("x", DType::kF32, {}, four), Error);
  EXPECT_THROW(w.add_tensor("x", DType::kF32, {1, 1, 1, 1, 4}, four), Error);
  EXPECT_THROW(w.add_tensor("x", DType::kF32, {4, 0}, four), Error);
  EXPECT_THROW(w.add_tensor("x", DType::kF32, {-4}, four), Error);
  EXPECT_THROW(w.add_tensor("x", DType::kF32, {5}, four), Error);    // byte count mismatch
  EXPECT_THROW(w.add_tensor("x", DType::kQ8_0, {16}, four), Error);  // not a whole block
  EXPECT_THROW(w.add_tensor("x", static_cast<DType>(4), {4}, four), Error);
  EXPECT_THROW(GgufWriter::tensor_nbytes(DType::kF32, {1ll << 40, 1ll << 30}), Error);
  EXPECT_THROW(w.add_tensor_streamed("x", DType::kF32, {4}, nullptr), Error);

  w.set_u32("k", 1);
  w.set_string("k", "replaced");  // replaces in place, keeps one entry
  EXPECT_EQ(w.metadata().size(), 1u);
  EXPECT_EQ(w.find("k")->get_string(), "replaced");
}

TEST(GgufWriter, CopyMetadataSkipsAlignment) {
  GgufWriter a = all_types_writer();
  a.set_alignment(64);
  const GgufReader r(a.to_bytes());
  GgufWriter b;
  b.copy_metadata(r);
  EXPECT_EQ(b.alignment(), 32u);
  EXPECT_EQ(b.metadata().size(), a.metadata().size() - 1);
  EXPECT_TRUE(*b.find("a.strings") == *r.find("a.strings"));
}

TEST(GgufGetters, IntegerConversionsAndMessages) {
  GgufWriter w;
  w.set_i32("neg", -5);
  w.set_u64("big", 1ull << 40);
  w.set_u8("small", 200);
  w.set_f32("f", 0.25f);
  w.set_array<uint8_t>("arr_u8", {1, 2, 3});
  w.set_array<int64_t>("arr_i64", {1, -2, 1ll << 33});
  w.set_array<uint32_t>("arr_u32", {10, 20});
  w.set_string("s", "x");
  const GgufReader r(w.to_bytes(), "conv.gguf");

  EXPECT_EQ(r.get_i64("neg"), -5);
  EXPECT_EQ(r.get_u32("small"), 200u);
  EXPECT_EQ(r.get_int<int16_t>("small"), 200);
  EXPECT_EQ(r.get_u64("big"), 1ull << 40);
  EXPECT_EQ(r.get_f64("f"), 0.25);
  EXPECT_EQ(r.find_int<uint32_t>("absent"), std::nullopt);
  EXPECT_EQ(r.find_int<uint32_t>("small"), std::optional<uint32_t>(200));
  EXPECT_EQ(r.get_u32("absent", 7u), 7u);
  EXPECT_EQ(r.get_f32("absent", 2.f), 2.f);
  EXPECT_EQ(r.get_string("absent", "d"), "d");
  EXPECT_TRUE(r.get_bool("absent", true));
  EXPECT_EQ(r.get_int_array<int32_t>("arr_u8"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r.get_int_array<uint32_t>("arr_u32"), (std::vector<uint32_t>{10, 20}));
  EXPECT_EQ(r.find("absent"), nullptr);
  EXPECT_FALSE(r.has("absent"));
  EXPECT_TRUE(r.has("neg"));

  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message([&] { r.get_u32("neg"); }),
            "file 'conv.gguf': key 'neg': value -5 is outside [0, 4294967295]");
  EXPECT_EQ(
      message([&] { r.get_i32("big"); }),
      "file 'conv.gguf': key 'big': value 1099511627776 is outside [-2147483648, 2147483647]");
  EXPECT_EQ(message([&] { r.get_u32("f"); }),
            "file 'conv.gguf': key 'f': expected an integer, got FLOAT32");
  EXPECT_EQ(message([&] { r.get_string("neg"); }),
            "file 'conv.gguf': key 'neg': expected STRING, got INT32");
  EXPECT_EQ(message([&] { r.get_u32("missing"); }), "file 'conv.gguf': missing key 'missing'");
  EXPECT_EQ(message([&] { r.get_f32("s"); }),
            "file 'conv.gguf': key 's': expected FLOAT32 or FLOAT64, got STRING");
  EXPECT_EQ(message([&] { r.get_int_array<uint32_t>("arr_i64"); }),
            "file 'conv.gguf': key 'arr_i64': element 1 = -2 is outside [0, 4294967295]");
  EXPECT_EQ(message([&] { r.get_array<int32_t>("arr_u8"); }),
            "file 'conv.gguf': key 'arr_u8': expected ARRAY[INT32], got ARRAY[UINT8]");
  EXPECT_EQ(message([&] { r.get_int_array<int32_t>("s"); }),
            "file 'conv.gguf': key 's': expected an array of integers, got STRING");
  EXPECT_EQ(message([&] { r.get_string_array("arr_u8"); }),
            "file 'conv.gguf': key 'arr_u8': expected ARRAY[STRING], got ARRAY[UINT8]");
  EXPECT_EQ(message([&] { r.tensor("w"); }), "file 'conv.gguf': missing tensor 'w'");
  EXPECT_EQ(r.find_tensor("w"), nullptr);
  EXPECT_THROW(r.get("arr_u8").element(3), Error);
  EXPECT_THROW(r.get("neg").element(0), Error);
}

// Seed corpus for fuzz/fuzz_gguf.cpp. Writes only when asked:
//   FULGUR_WRITE_FUZZ_CORPUS=fuzz/corpus ./build-gguf/test_gguf --gtest_filter=GgufFuzzCorpus.*
TEST(GgufFuzzCorpus, Write) {
  const char* dir = std::getenv("FULGUR_WRITE_FUZZ_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "set FULGUR_WRITE_FUZZ_CORPUS=DIR to write the seed corpus";
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<std::pair<std::string, GgufWriter>> seeds;
  seeds.emplace_back("all_types", all_types_writer());
  seeds.emplace_back("tensors_a32", tensors_writer(32, payloads));
  seeds.emplace_back("tensors_a8", tensors_writer(8, payloads));
  GgufWriter small;
  small.set_string("general.architecture", "qwen3");
  small.set_u32("qwen3.block_count", 1);
  small.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
  small.set_array<bool>("b", {true});
  small.add_tensor("w", DType::kQ8_0, {32, 2}, std::vector<uint8_t>(68, 5));
  small.add_tensor("n", DType::kF32, {4}, std::vector<uint8_t>(16, 6));
  seeds.emplace_back("small", std::move(small));
  GgufWriter empty;
  seeds.emplace_back("empty", std::move(empty));
  for (const auto& [name, w] : seeds) {
    const std::vector<uint8_t> bytes = w.to_bytes();
    std::FILE* f = std::fopen((std::string(dir) + "/" + name + ".gguf").c_str(), "wb");
    ASSERT_NE(f, nullptr) << "cannot write into " << dir;
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

}  // namespace
}  // namespace fulgur
