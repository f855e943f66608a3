// Loading errors: every missing or mis-shaped tensor and every inconsistent key is named.
#include <gtest/gtest.h>

#include <functional>

#include "gguf/gguf_writer.h"
#include "model/desc.h"
#include "model/weights.h"
#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::tiny_model;

// Rewrites the tiny model through `edit` and returns the error message of loading it.
std::string load_error(const std::function<void(GgufWriter&, const GgufReader&)>& edit,
                       const std::string& skip_tensor = "") {
  const GgufReader src(tiny_model());
  GgufWriter w;
  w.copy_metadata(src);
  for (const GgufTensorInfo& t : src.tensors()) {
    if (t.name == skip_tensor) continue;
    w.add_tensor(t.name, t.type, t.shape(), t.data, t.nbytes);
  }
  edit(w, src);
  const std::string path = ::testing::TempDir() + "/fulgur_bad_model.gguf";
  w.write(path);
  try {
    Model m(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
}

TEST(Load, MissingTensorIsNamed) {
  expect_contains(load_error([](GgufWriter&, const GgufReader&) {}, "blk.1.ffn_up.weight"),
                  "blk.1.ffn_up.weight");
}

TEST(Load, MisShapedTensorIsNamedWithBothShapes) {
  const std::string msg = load_error([](GgufWriter& w, const GgufReader&) {
    std::vector<float> v(128, 1.0f);
    w.add_tensor("blk.0.attn_norm.weight", DType::kF32, {128}, v.data(), v.size() * 4);
  }, "blk.0.attn_norm.weight");
  expect_contains(msg, "blk.0.attn_norm.weight");
  expect_contains(msg, "{128}");
  expect_contains(msg, "{256}");
}

TEST(Load, PerLayerArrayMustHaveBlockCountEntries) {
  const std::string msg = load_error([](GgufWriter& w, const GgufReader&) {
    w.set_array<uint32_t>("qwen3.feed_forward_length", {512, 512, 512});
  });
  expect_contains(msg, "qwen3.feed_forward_length");
  expect_contains(msg, "expected 2");
}

TEST(Load, PerLayerArrayOfRightLengthLoads) {
  EXPECT_EQ(load_error([](GgufWriter& w, const GgufReader&) {
    w.set_array<int32_t>("qwen3.attention.head_count_kv", {2, 2});
  }), "");
}

TEST(Load, UnknownArchitectureIsNamed) {
  expect_contains(load_error([](GgufWriter& w, const GgufReader&) {
    w.set_string("general.architecture", "mamba9");
  }), "mamba9");
}

TEST(Load, UntiedOutputIsUsedWhenPresent) {
  const GgufReader src(tiny_model());
  GgufWriter w;
  w.copy_metadata(src);
  for (const GgufTensorInfo& t : src.tensors()) w.add_tensor(t.name, t.type, t.shape(), t.data, t.nbytes);
  const GgufTensorInfo& e = src.tensor("token_embd.weight");
  w.add_tensor("output.weight", e.type, e.shape(), e.data, e.nbytes);
  const std::string path = ::testing::TempDir() + "/fulgur_untied.gguf";
  w.write(path);
  Model m(path);
  EXPECT_FALSE(m.weights().tied_output);
  EXPECT_NE(m.weights().output.data, m.weights().token_embd.data);
}

// The bytes a decoded token reads, counted from the file's tensor table: every matrix (2 or more
// dimensions) once, of an expert stack k of its n experts' share, one embedding row, and the
// embeddings again when they are also the output head. bytes_per_token() is that count, and
// token_weight_ranges() (what `fulgur bench --floor` reads) covers exactly those bytes in the
// file's layout, and the same matrices as tiles when repacked (never fewer bytes).
TEST(Load, TokenWeightRangesAreTheBytesATokenReads) {
  for (const std::string arch : {"qwen3", "qwen3moe"}) {
    const std::string path = tiny_model(arch, DType::kQ8_0);
    for (const bool pack : {false, true}) {
      const Model m(path, {.pack = pack});
      uint64_t want = 0;
      for (const GgufTensorInfo& t : m.gguf().tensors()) {
        const MoeDesc& moe = m.desc().layers[0].moe;
        if (t.name == "token_embd.weight")
          want += t.nbytes / static_cast<uint64_t>(t.ne[1]) + (m.weights().tied_output ? t.nbytes : 0);
        else if (t.name.ends_with("_exps.weight"))
          want += t.nbytes / moe.n_expert * moe.n_expert_used;
        else if (t.n_dims >= 2)
          want += t.nbytes;
      }
      EXPECT_EQ(m.bytes_per_token(), want) << arch;
      uint64_t sum = 0;
      for (std::span<const uint8_t> r : m.token_weight_ranges()) {
        EXPECT_GT(r.size(), 0u) << arch;
        sum += r.size();
      }
      if (pack)
        EXPECT_GE(sum, want) << arch;
      else
        EXPECT_EQ(sum, want) << arch;
    }
  }
}

}  // namespace
}  // namespace fulgur
