// Sliding-window attention memory (gemma4's and gpt-oss's sliding layers, window 16 in the tiny
// shapes): what
// lossless speculation needs from it. A verification batch gives bitwise the logits of
// single-token decode; seq_rm to any position inside it leaves a context whose next logits are
// bitwise those of a context that never saw the rejected rows — before, at and after the window
// fills, although the two contexts forgot different cells; the window cache stays bounded by the
// window, not the context; a rollback to cells the window forgot is refused (can_rm), changing
// nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "model/desc.h"
#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::decode_rows;
using testing_support::same_bits;
using testing_support::synth_model_file;
using testing_support::Logits;

constexpr int32_t kWindow = 16;  // the tiny gemma4 shapes' sliding_window
const std::vector<int32_t> kBatch = {33, 10, 35, 32, 100, 101, 102, 40};  // 8 verification rows
const std::vector<int32_t> kNext = {41, 58, 10};                          // decoded after a rollback

// A prompt of n tokens (a deterministic mix of the built-in vocabulary's byte tokens).
std::vector<int32_t> prompt_of(int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(32 + (i * 37 + 11) % 90);
  return p;
}

// One sequence, batches of up to 16 rows: the window cache holds 16 + 32 + 16 cells.
ContextParams params() { return {.n_ctx = 128, .n_batch = 16, .n_threads = 2, .n_seq_max = 1}; }



struct Shape {
  const char* arch;
  const char* shape;
  DType type;
};
// gpt-oss tiny (window 16 too) adds attention sinks, projection biases, YaRN and biased experts,
// with its experts in MXFP4 as real files have them.
constexpr Shape kShapes[] = {{"gemma4", "tiny", DType::kF32},     {"gemma4", "tiny", DType::kQ8_0},
                             {"gemma4", "tiny-moe", DType::kF32}, {"gemma4", "tiny-ple", DType::kF32},
                             {"gemma4", "tiny-ple", DType::kQ8_0}, {"gpt-oss", "tiny", DType::kF32},
                             {"gpt-oss", "tiny", DType::kMXFP4}};

TEST(SlidingWindow, SeqRmIntoAVerificationBatchIsExactAcrossTheWindowEdge) {
  for (const Shape& s : kShapes) {
    const Model m(synth_model_file(s.arch, s.shape, s.type, 1));
    ASSERT_EQ(m.desc().max_window(), kWindow);
    // Prompts before the window fills, with the batch across its edge, and well past it.
    for (int n_prompt : {5, 12, 20, 45}) {
      SCOPED_TRACE(std::string(s.arch) + " " + s.shape + " " + std::string(dtype_name(s.type)) + ", prompt " +
                   std::to_string(n_prompt));
      const std::vector<int32_t> prompt = prompt_of(n_prompt);
      const int32_t P = n_prompt;
      Logits single;  // the verification rows decoded one at a time
      {
        Context ctx(m, params());
        decode_rows(ctx, prompt, 0);
        for (int i = 0; i < 8; ++i) single.push_back(decode_rows(ctx, {kBatch[i]}, P + i)[0]);
      }
      for (int j = 0; j <= 8; ++j) {
        Context ctx(m, params());
        decode_rows(ctx, prompt, 0);
        const Logits verify = decode_rows(ctx, kBatch, P);
        for (int i = 0; i < 8; ++i) EXPECT_TRUE(same_bits(verify[i], single[i])) << "verification row " << i;
        ASSERT_TRUE(ctx.can_rm(0, P + j, -1)) << "keeping " << j;
        ASSERT_TRUE(ctx.seq_rm(0, P + j, -1));
        EXPECT_EQ(ctx.seq_pos_max(0), P + j - 1);
        const Logits got = decode_rows(ctx, kNext, P + j);
        // A context that never saw the rejected rows: the prompt, the kept rows one at a time.
        Context fresh(m, params());
        decode_rows(fresh, prompt, 0);
        for (int i = 0; i < j; ++i) decode_rows(fresh, {kBatch[i]}, P + i);
        const Logits want = decode_rows(fresh, kNext, P + j);
        for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "kept " << j << ", next row " << i;
      }
    }
  }
}

// The window forgets in whole attention tiles (32 positions), so a sequence can go back before
// its last batch while the cells its next row sees are still there, and the result is still that
// of a context that never went further. Prompt 45, batch 45..52: forgotten below 0 (30 rounded
// down to a tile), so a rollback to 42 keeps what a row at 42 sees (27..42).
TEST(SlidingWindow, RollbackBeforeTheLastBatchWithinTheRememberedTileIsExact) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::string(s.arch) + " " + s.shape + " " + std::string(dtype_name(s.type)));
    const Model m(synth_model_file(s.arch, s.shape, s.type, 1));
    const std::vector<int32_t> prompt = prompt_of(45);
    Context ctx(m, params());
    decode_rows(ctx, prompt, 0);
    decode_rows(ctx, kBatch, 45);
    ASSERT_TRUE(ctx.can_rm(0, 42, -1));
    ASSERT_TRUE(ctx.seq_rm(0, 42, -1));
    const Logits got = decode_rows(ctx, kNext, 42);
    Context fresh(m, params());
    const Logits want = (decode_rows(fresh, std::vector<int32_t>(prompt.begin(), prompt.begin() + 42), 0),
                         decode_rows(fresh, kNext, 42));
    for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "next row " << i;
  }
}

// Two sequences interleaved row by row in one batch, past the window: each row's logits are
// bitwise those of its sequence decoded alone.
TEST(SlidingWindow, InterleavedSequencesMatchEachDecodedAlone) {
  const Model m(synth_model_file("gemma4", "tiny", DType::kF32, 1));
  const std::vector<int32_t> prompt = prompt_of(40);
  Logits alone;
  {
    Context ctx(m, params());
    for (size_t i = 0; i < prompt.size(); ++i) alone.push_back(decode_rows(ctx, {prompt[i]}, static_cast<int32_t>(i))[0]);
  }
  Context ctx(m, {.n_ctx = 256, .n_batch = 16, .n_threads = 2, .n_seq_max = 2});
  for (size_t i0 = 0; i0 < prompt.size(); i0 += 8) {  // chunks of 8 positions, 16 rows
    Batch b;
    for (size_t i = i0; i < std::min(prompt.size(), i0 + 8); ++i) {
      b.add(prompt[i], static_cast<int32_t>(i), 0, true);
      b.add(prompt[i], static_cast<int32_t>(i), 3, true);
    }
    ctx.decode(b);
    for (int64_t r = 0; r < b.size(); ++r) {
      const std::vector<float> got(ctx.logits(r), ctx.logits(r) + m.n_vocab());
      EXPECT_TRUE(same_bits(got, alone[i0 + static_cast<size_t>(r / 2)])) << "position " << i0 + r / 2 << " row " << r;
    }
  }
}

TEST(SlidingWindow, RollbackToForgottenCellsIsRefusedAndChangesNothing) {
  const Model m(synth_model_file("gemma4", "tiny", DType::kF32, 1));
  const std::vector<int32_t> prompt = prompt_of(80);
  Context ctx(m, params());
  for (size_t i0 = 0; i0 < prompt.size(); i0 += 8) {
    decode_rows(ctx, std::vector<int32_t>(prompt.begin() + static_cast<int64_t>(i0), prompt.begin() + static_cast<int64_t>(i0) + 8),
           static_cast<int32_t>(i0));
  }
  // Rows at position 20 see positions 5..20; the window forgot them long ago.
  EXPECT_FALSE(ctx.can_rm(0, 20, -1));
  EXPECT_FALSE(ctx.seq_rm(0, 20, -1));
  EXPECT_EQ(ctx.seq_pos_max(0), 79);
  // Inside the last batch, and the whole sequence, always.
  EXPECT_TRUE(ctx.can_rm(0, 75, -1));
  EXPECT_TRUE(ctx.can_rm(0, 0, -1));
  // Nothing changed: the next row equals that of a context that decoded the same rows.
  const Logits got = decode_rows(ctx, {kNext[0]}, 80);
  Context fresh(m, params());
  decode_rows(fresh, prompt, 0);
  EXPECT_TRUE(same_bits(got[0], decode_rows(fresh, {kNext[0]}, 80)[0]));
  // Removing the whole sequence starts it afresh.
  ASSERT_TRUE(ctx.seq_rm(0, 0, -1));
  Context empty(m, params());
  EXPECT_TRUE(same_bits(decode_rows(ctx, prompt_of(3), 0)[2], decode_rows(empty, prompt_of(3), 0)[2]));
}

// The sliding layers' cache is bounded by the window: growing the context grows only the full
// layers' K and V.
TEST(SlidingWindow, WindowCacheDoesNotGrowWithTheContext) {
  const Model m(synth_model_file("gemma4", "tiny", DType::kF32, 1));
  const ModelDesc& d = m.desc();
  int64_t full_per_cell = 0, window_per_cell = 0;  // f16 K + V bytes per cell
  for (const LayerDesc& L : d.layers) {
    if (!L.attn.owns_kv()) continue;
    (L.attn.window > 0 ? window_per_cell : full_per_cell) += 2 * 2 * L.attn.kv_width();
  }
  ASSERT_GT(full_per_cell, 0);
  ASSERT_GT(window_per_cell, 0);
  const Context small(m, {.n_ctx = 8192, .n_batch = 512, .n_threads = 1, .n_seq_max = 1});
  const Context large(m, {.n_ctx = 32768, .n_batch = 512, .n_threads = 1, .n_seq_max = 1});
  const int64_t grown = large.kv_bytes() - small.kv_bytes();
  std::printf("[gemma4 tiny, one sequence, batch 512] K+V: %.2f MiB at 8k context, %.2f MiB at 32k\n",
              static_cast<double>(small.kv_bytes()) / (1 << 20), static_cast<double>(large.kv_bytes()) / (1 << 20));
  EXPECT_GE(grown, (32768 - 8192) * full_per_cell);
  EXPECT_LE(grown, (32768 - 8192) * full_per_cell * 105 / 100);  // block rounding only
  EXPECT_LT(small.kv_bytes(), 8192 * full_per_cell + 4 * (kWindow + 32 + 512) * window_per_cell);
}

// Bad gemma4 files are refused at load, naming the key or tensor.
TEST(Gemma4Load, BadFilesAreRefusedByName) {
  const std::string src = synth_model_file("gemma4", "tiny", DType::kF32, 1);
  const auto keys = [&](const std::string& tag, std::function<void(GgufWriter&)> f) {
    testing_support::GgufEdit e;
    e.metadata = std::move(f);
    return testing_support::write_edited_gguf(src, src + "." + tag + ".gguf", e);
  };
  testing_support::expect_load_error(keys("window0", [](GgufWriter& w) { w.set_u32("gemma4.attention.sliding_window", 0); }),
                                     {"gemma4.attention.sliding_window", "is 0"});
  testing_support::expect_load_error(
      keys("pattern", [](GgufWriter& w) {
        w.set_array("gemma4.attention.sliding_window_pattern", std::vector<bool>{true, true, false});
      }),
      {"sliding_window_pattern", "3 entries for 6 layers"});
  // Every layer KV-shared: nothing owns a cache to read.
  testing_support::expect_load_error(keys("shared", [](GgufWriter& w) { w.set_u32("gemma4.attention.shared_kv_layers", 6); }),
                                     {"shared_kv_layers", "is 6"});
  // A sliding layer's head dim that disagrees with its tensors.
  testing_support::expect_load_error(keys("headdim", [](GgufWriter& w) {
        w.set_u32("gemma4.attention.key_length_swa", 48);
        w.set_u32("gemma4.attention.value_length_swa", 48);
      }),
                                     {"blk.0.attn_q.weight", "expected"});
  // KV-shared layers whose attn_k is still there are fine (the tensors are ignored); a shared
  // layer whose kind has no KV-owning layer before it is refused.
  testing_support::expect_load_error(
      keys("nosrc", [](GgufWriter& w) {
        w.set_array("gemma4.attention.sliding_window_pattern", std::vector<bool>{true, true, true, true, true, false});
        w.set_u32("gemma4.attention.shared_kv_layers", 1);
      }),
      {"KV-shared layer 5", "full", "no earlier KV-owning layer"});
}

}  // namespace
}  // namespace fulgur
