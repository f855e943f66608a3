// RoPE as downloaded files carry it (archs-gguf.md §2.3): rope.scaling.* keys (linear, YaRN),
// llama3-style per-pair factors in rope_freqs, and llama.cpp's command-line overrides. That the
// numbers equal llama.cpp's is tests/llama's (LlamaOracle.RopeScaling*); here: what the loader
// reads, that the forward uses it, and that bad values are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gguf_edit.h"
#include "model/desc.h"
#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::F32Tensor;
using testing_support::GgufEdit;
using testing_support::tiny_model;
using testing_support::write_edited_gguf;

std::string edited(const std::string& name, const GgufEdit& edit) {
  return write_edited_gguf(tiny_model("llama"), ::testing::TempDir() + "/fulgur_rope_" + name + ".gguf", edit);
}

int64_t n_rot() { return Model(tiny_model("llama")).desc().rope.n_rot; }

// The last position's logits of a 24-token prompt decoded in one batch.
std::vector<float> last_logits(const Model& m) {
  Context ctx(m, {.n_ctx = 64, .n_batch = 32, .n_threads = 1});
  Batch b;
  for (int32_t i = 0; i < 24; ++i) b.add((37 * i + 11) % static_cast<int32_t>(m.n_vocab()), i, 0, i == 23);
  ctx.decode(b);
  return {ctx.logits(23), ctx.logits(23) + m.n_vocab()};
}

std::string load_error(const std::string& path) {
  try {
    Model m(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RopeScaling, LinearAndYarnKeysAreRead) {
  const Model plain(tiny_model("llama"));
  EXPECT_EQ(plain.desc().rope.freq_scale, 1.0f);
  EXPECT_EQ(plain.desc().rope.ext_factor, 0.0f);
  EXPECT_EQ(plain.desc().rope.freq_factors, nullptr);

  const Model linear(edited("linear", {.metadata = [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  }}));
  EXPECT_FLOAT_EQ(linear.desc().rope.freq_scale, 0.25f);
  EXPECT_EQ(linear.desc().rope.ext_factor, 0.0f);

  const Model yarn(edited("yarn", {.metadata = [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "yarn");
    w.set_f32("llama.rope.scaling.factor", 8.0f);
    w.set_u32("llama.rope.scaling.original_context_length", 48);
  }}));
  const kernels::RopeParams& r = yarn.desc().rope;
  EXPECT_FLOAT_EQ(r.freq_scale, 0.125f);
  EXPECT_EQ(r.ext_factor, 1.0f);  // llama.cpp's default for a YaRN model
  EXPECT_EQ(r.n_ctx_orig, 48);
  EXPECT_EQ(r.beta_fast, 32.0f);
  EXPECT_EQ(r.beta_slow, 1.0f);

  // The forward runs them: each scaling moves the logits away from plain RoPE's.
  const std::vector<float> base = last_logits(plain);
  EXPECT_NE(last_logits(linear), base);
  EXPECT_NE(last_logits(yarn), base);
  EXPECT_NE(last_logits(yarn), last_logits(linear));
}

TEST(RopeScaling, RopeFreqsDivideEachPairsFrequency) {
  const int64_t half = n_rot() / 2;
  F32Tensor f{{half}, std::vector<float>(static_cast<size_t>(half))};
  for (int64_t i = 0; i < half; ++i) f.data[static_cast<size_t>(i)] = 1.0f + 7.0f * static_cast<float>(i) / half;
  const Model m(edited("freqs", {.tensors = {{"rope_freqs.weight", f}}}));
  ASSERT_NE(m.desc().rope.freq_factors, nullptr);
  for (int64_t i = 0; i < half; ++i) EXPECT_EQ(m.desc().rope.freq_factors[i], f.data[static_cast<size_t>(i)]);
  EXPECT_NE(last_logits(m), last_logits(Model(tiny_model("llama"))));
  // All-ones factors are plain RoPE, bit for bit.
  F32Tensor ones{{half}, std::vector<float>(static_cast<size_t>(half), 1.0f)};
  EXPECT_EQ(last_logits(Model(edited("ones", {.tensors = {{"rope_freqs.weight", ones}}}))),
            last_logits(Model(tiny_model("llama"))));
}

TEST(RopeScaling, CommandLineOverridesReplaceTheFilesValues) {
  const Model m(tiny_model("llama"), ModelOptions{.rope = {.scaling = "yarn", .freq_base = 5000.0f,
                                                           .freq_scale = 0.5f, .yarn_orig_ctx = 32}});
  const kernels::RopeParams& r = m.desc().rope;
  EXPECT_EQ(r.freq_base, 5000.0f);
  EXPECT_EQ(r.freq_scale, 0.5f);
  EXPECT_EQ(r.ext_factor, 1.0f);
  EXPECT_EQ(r.n_ctx_orig, 32);
  // --rope-scaling none drops the file's scaling.
  const Model none(edited("none_override", {.metadata = [](GgufWriter& w) {
                     w.set_string("llama.rope.scaling.type", "linear");
                     w.set_f32("llama.rope.scaling.factor", 4.0f);
                   }}),
                   ModelOptions{.rope = {.scaling = "none"}});
  EXPECT_EQ(none.desc().rope.freq_scale, 1.0f);
  EXPECT_THROW(Model(tiny_model("llama"), ModelOptions{.rope = {.scaling = "longrope"}}), Error);
}

TEST(RopeScaling, BadValuesAreRefusedByName) {
  const std::string unknown = load_error(edited("unknown", {.metadata = [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "longrope");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  }}));
  EXPECT_NE(unknown.find("rope.scaling.type 'longrope'"), std::string::npos) << unknown;

  const std::string negative = load_error(edited("negative", {.metadata = [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", -2.0f);
  }}));
  EXPECT_NE(negative.find("scaling.factor"), std::string::npos) << negative;

  const int64_t half = n_rot() / 2;
  const std::string short_freqs = load_error(
      edited("short", {.tensors = {{"rope_freqs.weight", {{half - 1}, std::vector<float>(half - 1, 1.0f)}}}}));
  EXPECT_NE(short_freqs.find("rope_freqs.weight"), std::string::npos) << short_freqs;
  EXPECT_NE(short_freqs.find(std::to_string(half - 1) + " elements"), std::string::npos) << short_freqs;

  const std::string zero = load_error(
      edited("zero", {.tensors = {{"rope_freqs.weight", {{half}, std::vector<float>(half, 0.0f)}}}}));
  EXPECT_NE(zero.find("rope_freqs[0]"), std::string::npos) << zero;
}

}  // namespace
}  // namespace fulgur
