// Rollback on a recurrent target (Nemotron-H: Mamba2 + attention (+ MoE)), what lossless
// speculation needs from the model: the rows of a verification batch give bitwise the logits of
// single-token decode, and seq_rm to any position inside the batch leaves a context whose next
// logits are bitwise those of a context that never saw the rejected rows. Further back than the
// snapshots reach, seq_rm refuses and changes nothing; other sequences are untouched; seq_cp
// copies a sequence's state.
#include <gtest/gtest.h>

#include <cstring>

#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::decode_rows;
using testing_support::same_bits;
using testing_support::synth_model_file;

const std::vector<int32_t>& kPrompt = testing_support::kHelloPrompt;
const std::vector<int32_t> kBatch = {33, 10, 35, 32, 100, 101, 102, 40};  // the 8 verification rows
const std::vector<int32_t> kNext = {41, 58, 10};                          // decoded after a rollback
const int32_t kP = static_cast<int32_t>(kPrompt.size());

struct Shape {
  const char* arch;
  const char* shape;
};
constexpr Shape kShapes[] = {{"nemotron_h", "tiny"}, {"nemotron_h_moe", "tiny"}, {"nemotron_h_moe", "tiny-puzzle"}};

using testing_support::Logits;



// What a context that never saw the rejected rows computes: the prompt, the j kept rows one at
// a time, then kNext in one batch.
Logits never_saw(const Model& m, int j) {
  Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
  decode_rows(ctx, kPrompt, 0);
  for (int i = 0; i < j; ++i) decode_rows(ctx, {kBatch[i]}, kP + i);
  return decode_rows(ctx, kNext, kP + j);
}

TEST(RecurrentRollback, SeqRmIntoAVerificationBatchOfEightRowsIsExact) {
  for (const Shape& shape : kShapes) {
    for (DType type : {DType::kF32, DType::kQ8_0}) {
      SCOPED_TRACE(std::string(shape.arch) + " " + shape.shape + " " + std::string(dtype_name(type)));
      const Model m(synth_model_file(shape.arch, shape.shape, type, 1));
      // The verification rows against single-token decode.
      Logits single;
      {
        Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
        decode_rows(ctx, kPrompt, 0);
        for (int i = 0; i < 8; ++i) single.push_back(decode_rows(ctx, {kBatch[i]}, kP + i)[0]);
      }
      for (int j = 0; j <= 8; ++j) {
        // 9 snapshot planes: the batch's 8 rows and the prompt's last (for j = 0).
        Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2, .n_rollback = 9});
        decode_rows(ctx, kPrompt, 0);
        const Logits verify = decode_rows(ctx, kBatch, kP);
        for (int i = 0; i < 8; ++i) EXPECT_TRUE(same_bits(verify[i], single[i])) << "verification row " << i;
        ASSERT_TRUE(ctx.can_rm(0, kP + j, -1));
        ASSERT_TRUE(ctx.seq_rm(0, kP + j, -1)) << "keeping " << j << " rows";
        EXPECT_EQ(ctx.seq_pos_max(0), kP + j - 1);
        const Logits got = decode_rows(ctx, kNext, kP + j);
        const Logits want = never_saw(m, j);
        for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "kept " << j << ", next row " << i;
      }
    }
  }
}

// With the rollback the generator reserves (the batch's rows only), removing the whole batch
// is out of reach: refused, and nothing changed.
TEST(RecurrentRollback, SeqRmBeyondTheSnapshotsRefusesAndChangesNothing) {
  const Model m(synth_model_file("nemotron_h_moe", "tiny", DType::kF32, 1));
  Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2, .n_rollback = 8});
  decode_rows(ctx, kPrompt, 0);
  decode_rows(ctx, kBatch, kP);
  EXPECT_FALSE(ctx.can_rm(0, kP, -1));
  EXPECT_FALSE(ctx.seq_rm(0, kP, -1));
  EXPECT_FALSE(ctx.seq_rm(0, 3, -1));
  EXPECT_EQ(ctx.seq_pos_max(0), kP + 7);
  // Still the state after all 8 rows.
  const Logits got = decode_rows(ctx, kNext, kP + 8);
  const Logits want = never_saw(m, 8);
  for (size_t i = 0; i < kNext.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "next row " << i;
  // And rolling back into that batch still works.
  EXPECT_TRUE(ctx.seq_rm(0, kP + 9, -1));
  // Removing a whole sequence always does.
  EXPECT_TRUE(ctx.seq_rm(0, 0, -1));
  EXPECT_EQ(ctx.seq_pos_max(0), -1);
}

// Two sequences verify in one batch, rows interleaved; one rolls back, the other keeps all its
// rows: each continues as if alone.
TEST(RecurrentRollback, RollingBackOneSequenceLeavesTheOtherUntouched) {
  const Model m(synth_model_file("nemotron_h_moe", "tiny-puzzle", DType::kQ8_0, 1));
  Context ctx(m, {.n_ctx = 96, .n_batch = 32, .n_threads = 2, .n_rollback = 8});
  Batch b;
  for (size_t i = 0; i < kPrompt.size(); ++i) {
    b.add(kPrompt[i], static_cast<int32_t>(i), 1, false);
    b.add(kPrompt[i], static_cast<int32_t>(i), 2, false);
  }
  ctx.decode(b);
  b.clear();
  for (size_t i = 0; i < kBatch.size(); ++i) {
    b.add(kBatch[i], kP + static_cast<int32_t>(i), 1, true);
    b.add(kBatch[i], kP + static_cast<int32_t>(i), 2, true);
  }
  ctx.decode(b);
  ASSERT_TRUE(ctx.seq_rm(2, kP + 3, -1));
  const Logits one = decode_rows(ctx, kNext, kP + 8, 1);
  const Logits two = decode_rows(ctx, kNext, kP + 3, 2);
  const Logits want_one = never_saw(m, 8), want_two = never_saw(m, 3);
  for (size_t i = 0; i < kNext.size(); ++i) {
    EXPECT_TRUE(same_bits(one[i], want_one[i])) << "sequence 1, next row " << i;
    EXPECT_TRUE(same_bits(two[i], want_two[i])) << "sequence 2, next row " << i;
  }
}

// seq_cp gives the copy the source's state: both continue bitwise alike.
TEST(RecurrentRollback, SeqCpCopiesTheState) {
  const Model m(synth_model_file("nemotron_h", "tiny", DType::kF32, 1));
  Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
  decode_rows(ctx, kPrompt, 0);
  ctx.seq_cp(0, 3, 0, -1);
  EXPECT_EQ(ctx.seq_pos_max(3), kP - 1);
  const Logits copy = decode_rows(ctx, kBatch, kP, 3);
  const Logits original = decode_rows(ctx, kBatch, kP, 0);
  for (size_t i = 0; i < kBatch.size(); ++i) EXPECT_TRUE(same_bits(copy[i], original[i])) << "row " << i;
}

}  // namespace
}  // namespace fulgur
