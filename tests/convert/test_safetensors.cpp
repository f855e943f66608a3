// safetensors: writer -> reader round trip, sharded checkpoints, every validation error, dtype
// conversions, and the real zoo checkpoints when present.
#include "zoo_path.h"
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "core/error.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using D = SafetensorsDType;

// A fresh directory under the test temp dir, removed at the end of the test.
class SafetensorsTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = testing::TempDir() + "fulgur_st_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // A file with the given header text; `n` overrides the stored header length.
  std::string raw(const std::string& name, const std::string& header, size_t data_bytes,
                  std::optional<uint64_t> n = std::nullopt) {
    std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0);
    const uint64_t len = n.value_or(header.size());
    std::memcpy(bytes.data(), &len, 8);
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    write_file_atomic(path(name), bytes);
    return path(name);
  }

  // Expects opening `file` to throw an Error whose message contains every piece.
  static void expect_error(const std::string& file, std::vector<std::string> pieces) {
    try {
      SafetensorsFile f(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const Error& e) {
      for (const std::string& p : pieces) {
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
            << "'" << p << "' not in: " << e.what();
      }
    }
  }

  std::string dir_;
};

template <class T>
std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

TEST_F(SafetensorsTest, WriterReaderRoundTrip) {
  const std::vector<float> a = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f};  // [2][3]
  const std::vector<float> b = {1.0f, 0.5f, -0.25f, 65504.0f};            // bf16 rounds 65504
  const std::vector<float> c = {0.5f, -1.5f, 2.0f};
  const std::vector<int64_t> ids = {-5, 1234567890123};
  SafetensorsWriter w;
  w.set_metadata("origin", "test");
  w.add_f32("model.c", {3, 1}, c, D::kF16);
  w.add_f32("model.b", {4}, b, D::kBF16);
  w.add_f32("model.a", {2, 3}, a);
  w.add("ids", D::kI64, {2}, as_bytes(ids));
  w.add_f32("scalar", {}, std::vector<float>{42.0f});
  w.add_f32("empty", {0, 4}, std::vector<float>{});
  EXPECT_EQ(w.data_bytes(), 24u + 8u + 6u + 16u + 4u + 0u);
  EXPECT_THROW(w.add_f32("model.a", {1}, std::vector<float>{1.0f}), Error);
  EXPECT_THROW(w.add_f32("bad", {2, 2}, std::vector<float>{1.0f}), Error);
  EXPECT_THROW(w.add_f32("bad", {1}, std::vector<float>{1.0f}, D::kI32), Error);
  EXPECT_THROW(w.add_f32("__metadata__", {1}, std::vector<float>{1.0f}), Error);
  w.write(path("model.safetensors"));
  EXPECT_FALSE(fs::exists(path("model.safetensors") + ".tmp." + std::to_string(getpid())));

  const SafetensorsFile f(path("model.safetensors"));
  EXPECT_EQ(f.header_bytes() % 8, 0u);  // padded so the buffer starts 8-aligned
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("origin"), "test");
  ASSERT_EQ(f.tensors().size(), 6u);
  for (const auto& t : f.tensors()) {  // every tensor aligned to its element size
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % (safetensors_dtype_bits(t.dtype) / 8), 0u)
        << t.name;
  }
  const auto& ta = f.tensor("model.a");
  EXPECT_EQ(ta.dtype, D::kF32);
  EXPECT_EQ(ta.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ta.bytes, 24u);
  EXPECT_EQ(std::memcmp(ta.data, a.data(), 24), 0);
  EXPECT_EQ(f.tensor("scalar").shape.size(), 0u);
  EXPECT_EQ(f.tensor("scalar").n_elements(), 1);
  EXPECT_EQ(f.tensor("empty").n_elements(), 0);
  EXPECT_EQ(f.find("missing"), nullptr);

  const Checkpoint ck(dir_);
  EXPECT_EQ(ck.n_files(), 1u);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"empty", "ids", "model.a", "model.b",
                                                  "model.c", "scalar"}));
  EXPECT_EQ(ck.to_f32("model.a"), a);
  EXPECT_EQ(ck.to_f32("model.c"), c);  // exact in f16
  const auto bf = ck.to_f32("model.b");
  EXPECT_EQ(bf[0], 1.0f);
  EXPECT_EQ(bf[2], -0.25f);
  EXPECT_EQ(bf[3], 65536.0f);  // 65504 rounds to nearest even in bf16's 8-bit mantissa
  EXPECT_EQ(ck.to_f32("ids"), (std::vector<float>{-5.0f, 1234567890123.0f}));
  EXPECT_EQ(ck.to_f32("scalar"), std::vector<float>{42.0f});
  EXPECT_TRUE(ck.to_f32("empty").empty());
  std::vector<float> small(2);
  EXPECT_THROW(ck.to_f32("model.a", small), Error);
  try {
    ck.tensor("nope");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
  }
  // The same checkpoint opened through the file path.
  EXPECT_EQ(Checkpoint(path("model.safetensors")).names().size(), 6u);
}

TEST_F(SafetensorsTest, ShardedIndex) {
  SafetensorsWriter w1, w2;
  w1.add_f32("model.embed.weight", {2, 2}, std::vector<float>{1, 2, 3, 4});
  w1.add_f32("model.layers.0.w", {2}, std::vector<float>{5, 6});
  w2.add_f32("model.layers.1.w", {2}, std::vector<float>{7, 8}, D::kBF16);
  w2.add_f32("unlisted", {1}, std::vector<float>{9});
  w1.write(path("model-00001-of-00002.safetensors"));
  w2.write(path("model-00002-of-00002.safetensors"));
  write_safetensors_index(path("model.safetensors.index.json"),
                          {{"model.embed.weight", "model-00001-of-00002.safetensors"},
                           {"model.layers.0.w", "model-00001-of-00002.safetensors"},
                           {"model.layers.1.w", "model-00002-of-00002.safetensors"}},
                          w1.data_bytes() + w2.data_bytes());
  const Checkpoint ck(dir_);
  EXPECT_EQ(ck.n_files(), 2u);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"model.embed.weight", "model.layers.0.w",
                                                  "model.layers.1.w"}));
  EXPECT_FALSE(ck.has("unlisted"));  // the weight_map is authoritative
  EXPECT_EQ(ck.to_f32("model.layers.1.w"), (std::vector<float>{7, 8}));
  EXPECT_EQ(ck.tensor("model.embed.weight").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ck.metadata().at("format"), "pt");
  EXPECT_EQ(Checkpoint(path("model.safetensors.index.json")).names().size(), 3u);

  auto expect_index_error = [&](const std::string& text, const std::string& piece) {
    const std::string p = path("bad.index.json");
    write_file_atomic(p, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
    try {
      Checkpoint bad(p);
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  };
  expect_index_error(R"({"weight_map": {"model.layers.0.w": "model-00002-of-00002.safetensors"}})",
                     "'model.layers.0.w' is mapped to 'model-00002-of-00002.safetensors'");
  expect_index_error(R"({"weight_map": {"x": "../evil.safetensors"}})", "not a file name");
  expect_index_error(R"({"weight_map": {"x": "absent.safetensors"}})", "absent.safetensors");
  expect_index_error(R"({"weight_map": {"x": 3}})", "weight_map['x']");
  expect_index_error(R"({"metadata": {}})", "weight_map");
  expect_index_error(R"({"weight_map": )", "not valid JSON");
}

TEST_F(SafetensorsTest, DirectoryWithoutStandardNames) {
  SafetensorsWriter w1, w2;
  w1.add_f32("a", {1}, std::vector<float>{1});
  w2.add_f32("b", {1}, std::vector<float>{2});
  w1.write(path("one.safetensors"));
  w2.write(path("two.safetensors"));
  EXPECT_EQ(Checkpoint(dir_).names(), (std::vector<std::string>{"a", "b"}));
  w2.add_f32("a", {1}, std::vector<float>{3});  // now a duplicate across files
  w2.write(path("two.safetensors"));
  EXPECT_THROW(Checkpoint c(dir_), Error);
  fs::remove(path("one.safetensors"));
  fs::remove(path("two.safetensors"));
  EXPECT_THROW(Checkpoint c(dir_), Error);
  EXPECT_THROW(Checkpoint c(path("nothing.safetensors")), Error);
}

TEST_F(SafetensorsTest, HeaderErrors) {
  std::vector<uint8_t> tiny = {1, 2, 3};
  write_file_atomic(path("tiny.safetensors"), tiny);
  expect_error(path("tiny.safetensors"), {"tiny.safetensors", "too small"});
  expect_error(raw("long.safetensors", "{}", 0, 1000), {"long.safetensors", "header length 1000"});
  expect_error(raw("huge.safetensors", "{}", 0, 1ull << 40), {"huge.safetensors", "limit"});
  expect_error(raw("json.safetensors", R"({"a": {"dtype": )", 0),
               {"json.safetensors", "not valid JSON"});
  expect_error(raw("array.safetensors", "[1, 2]", 0), {"array.safetensors", "expected an object"});
  expect_error(raw("meta.safetensors", R"({"__metadata__": {"format": 1}})", 0),
               {"__metadata__ field 'format'"});
  // Trailing-space padding is legal.
  EXPECT_NO_THROW(SafetensorsFile(raw("pad.safetensors", "{}      ", 0)));
}

TEST_F(SafetensorsTest, TensorEntryErrors) {
  auto one = [&](const std::string& entry, size_t data_bytes) {
    return raw("t.safetensors", R"({"w": )" + entry + "}", data_bytes);
  };
  expect_error(one(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 16]})", 8),
               {"t.safetensors", "tensor 'w'", "run past the end of the data (8 bytes)"});
  expect_error(one(R"({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]})", 8),
               {"tensor 'w'", "span 8 bytes", "needs 12"});
  expect_error(one(R"({"dtype": "F32", "shape": [2], "data_offsets": [8, 0]})", 8),
               {"tensor 'w'", "ends before it begins"});
  expect_error(one(R"({"dtype": "F33", "shape": [2], "data_offsets": [0, 8]})", 8),
               {"tensor 'w'", "unknown dtype 'F33'"});
  expect_error(one(R"({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]})", 8),
               {"tensor 'w'", "shape dimension is -2"});
  expect_error(one(R"({"dtype": "F32", "shape": 2, "data_offsets": [0, 8]})", 8),
               {"tensor 'w'", "shape is 2"});
  expect_error(one(R"({"dtype": "F32", "shape": [2]})", 8), {"tensor 'w'", "'data_offsets'"});
  expect_error(one(R"({"dtype": "F32", "shape": [2], "data_offsets": [0]})", 8),
               {"tensor 'w'", "expected [begin, end]"});
  expect_error(one(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8.5]})", 8),
               {"tensor 'w'", "non-negative integer"});
  expect_error(one(R"({"dtype": "F4", "shape": [3], "data_offsets": [0, 1]})", 8),
               {"tensor 'w'", "whole bytes"});
  expect_error(one(R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]})", 8),
               {"tensor 'w'", "too many elements"});
  expect_error(one("[]", 8), {"tensor 'w'", "expected an object"});
  // Overlap: b starts inside a.
  expect_error(raw("o.safetensors",
                   R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                       "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                   12),
               {"o.safetensors", "tensor 'b' overlaps tensor 'a'"});
  // Empty tensors overlap nothing; a hole between tensors is tolerated.
  EXPECT_NO_THROW(SafetensorsFile(raw("ok.safetensors",
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}})", 16)));
}

// Corrupted headers and truncated files must fail with an Error, never crash (run under
// ASan/UBSan in the sanitizer build).
TEST_F(SafetensorsTest, CorruptedFilesNeverCrash) {
  SafetensorsWriter w;
  w.add_f32("a.weight", {3, 4}, std::vector<float>(12, 1.0f), D::kBF16);
  w.add_f32("b", {5}, std::vector<float>(5, 2.0f));
  w.add("c", D::kI8, {2}, std::vector<uint8_t>{1, 2});
  w.write(path("good.safetensors"));
  const SafetensorsFile good(path("good.safetensors"));
  const size_t header_end = 8 + good.header_bytes();
  std::vector<uint8_t> original(header_end + 24 + 20 + 2);
  std::memcpy(original.data(), good.tensors()[0].data - header_end, original.size());
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int errors = 0;
  for (int i = 0; i < 400; ++i) {
    std::vector<uint8_t> bytes = original;
    if (i % 4 == 0) {
      bytes.resize(next() % bytes.size());  // truncated anywhere
    } else {
      for (int j = 0; j < 1 + i % 3; ++j) bytes[next() % header_end] = uint8_t(next());
    }
    write_file_atomic(path("bad.safetensors"), bytes);
    try {
      const SafetensorsFile f(path("bad.safetensors"));
      for (const auto& t : f.tensors()) {  // whatever was accepted must be readable
        std::vector<float> out(static_cast<size_t>(t.n_elements()));
        if (safetensors_dtype_to_f32_supported(t.dtype)) {
          safetensors_to_f32(t.dtype, t.data, out.size(), out.data(), t.name);
        }
      }
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
}

TEST(SafetensorsDTypes, NamesAndConversions) {
  for (int i = 0; i <= static_cast<int>(D::kF6_E3M2); ++i) {
    const auto t = static_cast<D>(i);
    EXPECT_EQ(parse_safetensors_dtype(safetensors_dtype_name(t)), t) << i;
  }
  EXPECT_EQ(parse_safetensors_dtype("f32"), std::nullopt);  // case matters in the format
  EXPECT_EQ(safetensors_dtype_bits(D::kF4), 4);
  EXPECT_EQ(safetensors_dtype_bits(D::kBF16), 16);

  float out[5];
  const uint8_t e4m3[] = {0x38, 0x7E, 0x01, 0xC0, 0xFF};  // 1, 448, 2^-9, -2, NaN
  safetensors_to_f32(D::kF8_E4M3, e4m3, 5, out, "t");
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 448.0f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -9));
  EXPECT_EQ(out[3], -2.0f);
  EXPECT_TRUE(std::isnan(out[4]));
  const uint8_t e5m2[] = {0x3C, 0xC0, 0x7C};  // 1, -2, inf
  safetensors_to_f32(D::kF8_E5M2, e5m2, 3, out, "t");
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_TRUE(std::isinf(out[2]));
  const uint8_t e8m0[] = {127, 130, 0xFF};
  safetensors_to_f32(D::kF8_E8M0, e8m0, 3, out, "t");
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 8.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  const uint8_t i8[] = {0xFD, 7};
  safetensors_to_f32(D::kI8, i8, 2, out, "t");
  EXPECT_EQ(out[0], -3.0f);
  safetensors_to_f32(D::kBool, i8, 2, out, "t");
  EXPECT_EQ(out[0], 1.0f);
  const double f64[] = {0.125};
  safetensors_to_f32(D::kF64, reinterpret_cast<const uint8_t*>(f64), 1, out, "t");
  EXPECT_EQ(out[0], 0.125f);
  try {
    safetensors_to_f32(D::kC64, i8, 1, out, "file: tensor 'z'");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'z': dtype C64"), std::string::npos);
  }
}

// The trained zoo target (see /work/shared/zoo/README.md); skipped where the zoo is absent.
TEST(SafetensorsZoo, Qwen3CodeTarget) {
  const std::string dir = fulgur::test::zoo_dir() + "/zoo-qwen3-code";
  if (!fs::exists(dir + "/model.safetensors")) GTEST_SKIP() << dir << " absent";
  const Checkpoint ck(dir);
  const auto names = ck.names();
  EXPECT_EQ(names.size(), 2u + 6u * 11u);  // embed + final norm + 11 per layer; tied: no lm_head
  EXPECT_FALSE(ck.has("lm_head.weight"));
  const auto shape = [&](const std::string& n) { return ck.tensor(n).shape; };
  EXPECT_EQ(shape("model.embed_tokens.weight"), (std::vector<int64_t>{4096, 256}));
  EXPECT_EQ(shape("model.layers.0.self_attn.q_proj.weight"), (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(shape("model.layers.5.self_attn.k_proj.weight"), (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(shape("model.layers.3.self_attn.q_norm.weight"), (std::vector<int64_t>{64}));
  EXPECT_EQ(shape("model.layers.2.mlp.gate_proj.weight"), (std::vector<int64_t>{768, 256}));
  EXPECT_EQ(shape("model.layers.2.mlp.down_proj.weight"), (std::vector<int64_t>{256, 768}));
  int64_t total = 0;
  for (const auto& n : names) {
    EXPECT_EQ(ck.tensor(n).dtype, D::kF32) << n;
    total += ck.tensor(n).n_elements();
  }
  EXPECT_EQ(total, 5771264);  // "params (stored)" in the zoo README
  const auto norm = ck.to_f32("model.norm.weight");
  ASSERT_EQ(norm.size(), 256u);
  for (float x : norm) EXPECT_TRUE(std::isfinite(x));
}

TEST(SafetensorsZoo, DSparkDraft) {
  const std::string dir = fulgur::test::zoo_dir() + "/zoo-dspark";
  if (!fs::exists(dir + "/model.safetensors")) GTEST_SKIP() << dir << " absent";
  const Checkpoint ck(dir);
  EXPECT_EQ(ck.tensor("fc.weight").shape, (std::vector<int64_t>{256, 768}));
  EXPECT_EQ(ck.tensor("markov_head.markov_w1.weight").shape, (std::vector<int64_t>{4096, 64}));
  EXPECT_EQ(ck.tensor("confidence_head.proj.weight").shape, (std::vector<int64_t>{1, 320}));
  EXPECT_EQ(ck.tensor("confidence_head.proj.bias").shape, (std::vector<int64_t>{1}));
  int64_t total = 0;
  for (const auto& n : ck.names()) total += ck.tensor(n).n_elements();
  EXPECT_EQ(total, 3605953);
}

// The in-memory reader (the fuzzer's entry point) sees the same tensors as the file reader.
TEST_F(SafetensorsTest, MemoryReaderMatchesFileReader) {
  SafetensorsWriter w;
  w.add_f32("a", {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  w.add("p", D::kU8, {2, 4}, std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8});
  w.write(path("m.safetensors"));
  const SafetensorsFile file(path("m.safetensors"));
  std::ifstream in(path("m.safetensors"), std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const SafetensorsFile mem(bytes.data(), bytes.size(), "memory");
  ASSERT_EQ(mem.tensors().size(), file.tensors().size());
  for (const SafetensorsTensor& t : file.tensors()) {
    const SafetensorsTensor& m = mem.tensor(t.name);
    EXPECT_EQ(m.shape, t.shape);
    EXPECT_EQ(m.dtype, t.dtype);
    EXPECT_EQ(std::memcmp(m.data, t.data, t.bytes), 0) << t.name;
  }
  EXPECT_EQ(mem.path(), "memory");
  try {
    const SafetensorsFile bad(bytes.data(), 7, "short");
    ADD_FAILURE() << "a 7-byte buffer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("short"), std::string::npos) << e.what();
  }
}

// Seed corpus for fuzz/fuzz_safetensors.cpp (skipped unless asked for):
//   FULGUR_WRITE_FUZZ_CORPUS=fuzz/corpus-safetensors build/test_convert --gtest_filter=SafetensorsFuzzCorpus.*
TEST(SafetensorsFuzzCorpus, Write) {
  const char* dir = std::getenv("FULGUR_WRITE_FUZZ_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "set FULGUR_WRITE_FUZZ_CORPUS=DIR to write the seed corpus";
  fs::create_directories(dir);
  SafetensorsWriter all;  // one small tensor of every dtype with an f32 meaning
  all.set_metadata("format", "pt");
  int i = 0;
  for (D t : {D::kBool, D::kU8, D::kI8, D::kI16, D::kU16, D::kF16, D::kBF16, D::kI32, D::kU32,
              D::kF32, D::kF64, D::kI64, D::kU64, D::kF8_E4M3, D::kF8_E5M2, D::kF8_E8M0}) {
    const size_t bytes = static_cast<size_t>(safetensors_dtype_bits(t) / 8) * 3;
    all.add(cat("t", i++), t, {3}, std::vector<uint8_t>(bytes, 0x3c));
  }
  all.write(std::string(dir) + "/all_dtypes.safetensors");
  SafetensorsWriter nvfp4;  // a compressed-tensors NVFP4 linear: packed codes, scales, global
  nvfp4.add("l.weight_packed", D::kU8, {2, 8}, std::vector<uint8_t>(16, 0x21));
  nvfp4.add("l.weight_scale", D::kF8_E4M3, {2, 1}, std::vector<uint8_t>{0x38, 0x40});
  nvfp4.add_f32("l.weight_global_scale", {1}, std::vector<float>{448.0f});
  nvfp4.write(std::string(dir) + "/nvfp4.safetensors");
  SafetensorsWriter scalar;  // a 0-d tensor and an empty one
  scalar.add_f32("s", {}, std::vector<float>{1.5f});
  scalar.add_f32("e", {0, 4}, std::vector<float>{});
  scalar.write(std::string(dir) + "/scalar_empty.safetensors");
}

}  // namespace
}  // namespace fulgur
