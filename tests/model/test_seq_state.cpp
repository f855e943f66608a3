// Context::save_seq / load_seq, what the server's host-memory prompt cache stands on: a
// sequence's memory copied out and back in (into another context, onto another sequence id,
// between other sequences' cells) continues bitwise as the original does, and rolls back to
// exactly the positions SeqState::restorable names; a load that cannot fit, or a state of
// another model, is refused and changes nothing.
#include <gtest/gtest.h>

#include "model/seq_state.h"
#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::decode_rows;
using testing_support::Logits;
using testing_support::same_bits;
using testing_support::synth_model_file;

const std::vector<int32_t> kNext = {41, 58, 10, 77};

// A prompt of n tokens (a deterministic mix of the built-in vocabulary's byte tokens).
std::vector<int32_t> prompt_of(int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(32 + (i * 37 + 11) % 90);
  return p;
}

constexpr int kPromptLen = 100;  // far past the tiny gemma4 shapes' window of 16
constexpr int kCheckpoint = 24;

ContextParams params() { return {.n_ctx = 128, .n_batch = 16, .n_threads = 2, .n_seq_max = 2, .n_rollback = 4}; }

// Decodes the prompt on seq in chunks of 16, checkpointing the memory after kCheckpoint tokens.
void prefill(Context& ctx, const std::vector<int32_t>& prompt, int seq) {
  const std::vector<int32_t> head(prompt.begin(), prompt.begin() + kCheckpoint);
  for (int32_t p = 0; p < kCheckpoint; p += 16) {
    decode_rows(ctx, std::vector<int32_t>(head.begin() + p, head.begin() + std::min(p + 16, kCheckpoint)), p, seq);
  }
  ctx.checkpoint(seq);
  decode_rows(ctx, std::vector<int32_t>(prompt.begin() + kCheckpoint, prompt.end()), kCheckpoint, seq);
}

struct Case {
  const char* arch;
  const char* shape;
  DType type;
};
const Case kCases[] = {{"qwen3", "tiny", DType::kF32},      {"qwen3", "tiny", DType::kQ8_0},
                       {"gemma4", "tiny", DType::kF32},     {"gemma4", "tiny-ple", DType::kQ8_0},
                       {"qwen35", "tiny", DType::kF32},     {"nemotron_h", "tiny", DType::kF32},
                       {"nemotron_h_moe", "tiny", DType::kQ8_0}};

std::string name(const Case& c) { return std::string(c.arch) + " " + c.shape + " " + std::string(dtype_name(c.type)); }

TEST(SeqState, ALoadedMemoryContinuesBitwiseInAnotherContextAndSequence) {
  const std::vector<int32_t> prompt = prompt_of(kPromptLen);
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const Model m(synth_model_file(c.arch, c.shape, c.type, 1));
    Context a(m, params());
    prefill(a, prompt, 0);
    const SeqState st = a.save_seq(0);
    EXPECT_EQ(st.n_pos, kPromptLen);
    EXPECT_GT(st.bytes(), 0);
    const Logits want = decode_rows(a, kNext, kPromptLen, 0);

    // Another context whose cells another sequence already uses, loaded onto sequence 1.
    Context b(m, params());
    decode_rows(b, prompt_of(7), 0, 0);
    b.load_seq(1, st);
    EXPECT_EQ(b.seq_pos_max(1), kPromptLen - 1);
    const Logits got = decode_rows(b, kNext, kPromptLen, 1);
    for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "row " << i;

    // Loading over a sequence that holds something replaces it.
    Context d(m, params());
    decode_rows(d, prompt_of(9), 0, 1);
    d.load_seq(1, st);
    const Logits again = decode_rows(d, kNext, kPromptLen, 1);
    for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(again[i], want[i])) << "row " << i << " (replaced)";
  }
}

TEST(SeqState, RollsBackToExactlyThePositionsRestorableNames) {
  const std::vector<int32_t> prompt = prompt_of(kPromptLen);
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const Model m(synth_model_file(c.arch, c.shape, c.type, 1));
    Context a(m, params());
    prefill(a, prompt, 0);
    const SeqState st = a.save_seq(0);
    int n_restorable = 0;
    for (int32_t p = 0; p <= kPromptLen; ++p) {
      Context b(m, params());
      b.load_seq(0, st);
      ASSERT_EQ(b.can_rm(0, p, -1), st.restorable(p)) << "position " << p;
      if (!st.restorable(p)) continue;
      ++n_restorable;
      ASSERT_TRUE(b.seq_rm(0, p, -1)) << "position " << p;
      // Bitwise against a fresh context at the ends, the checkpoint, the window's edge and a sample.
      if (p % 9 != 0 && p != kPromptLen && p != kCheckpoint && st.restorable(p - 1)) continue;
      const Logits got = decode_rows(b, kNext, p, 0);
      Context fresh(m, params());
      if (p > 0) decode_rows(fresh, std::vector<int32_t>(prompt.begin(), prompt.begin() + p), 0, 0);
      const Logits want = decode_rows(fresh, kNext, p, 0);
      for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "kept " << p << ", row " << i;
    }
    if (st.recurrent) {
      // A recurrent state comes back at its end, its checkpoint and 0 only.
      EXPECT_EQ(n_restorable, 3);
      EXPECT_TRUE(st.restorable(kCheckpoint));
    } else if (st.window > 0) {
      EXPECT_GT(n_restorable, 2);
      EXPECT_LT(n_restorable, kPromptLen + 1) << "the window's forgotten cells cannot come back";
    } else {
      EXPECT_EQ(n_restorable, kPromptLen + 1);
    }
  }
}

TEST(SeqState, ALoadThatCannotFitOrComesFromAnotherModelIsRefusedAndChangesNothing) {
  const Model m(synth_model_file("qwen3", "tiny", DType::kF32, 1));
  Context a(m, params());
  prefill(a, prompt_of(kPromptLen), 0);
  const SeqState st = a.save_seq(0);

  Context small(m, {.n_ctx = 48, .n_batch = 16, .n_threads = 2});
  decode_rows(small, prompt_of(5), 0, 1);
  decode_rows(small, prompt_of(30), 0, 0);
  try {
    small.load_seq(1, st);
    FAIL() << "a 40-token memory was loaded where 18 cells are available";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(small.seq_pos_max(1), 4);
  EXPECT_EQ(small.seq_pos_max(0), 29);

  const Model other(synth_model_file("qwen35", "tiny", DType::kF32, 1));
  Context c(other, params());
  decode_rows(c, prompt_of(5), 0, 0);
  try {
    c.load_seq(0, st);
    FAIL() << "a qwen3 memory was loaded into a qwen35 context";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.seq_pos_max(0), 4);
}

}  // namespace
}  // namespace fulgur
