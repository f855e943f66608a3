// The recurrent memory's bookkeeping (model/recurrent_state.h), driven by a toy recurrence in
// the way a recurrent layer kind drives it: rollback into the last decode restores exactly the
// state a shorter history gives, anything further back is refused without changing anything.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "model/recurrent_state.h"

namespace fulgur {
namespace {

constexpr int64_t kConv = 3, kState = 5;

// One layer's toy step: conv shifts in the token, the state decays and adds it.
void step(float* conv, float* state, int32_t token, int32_t pos) {
  std::memmove(conv, conv + 1, (kConv - 1) * sizeof(float));
  conv[kConv - 1] = static_cast<float>(token);
  for (int64_t i = 0; i < kState; ++i) state[i] = 0.5f * state[i] + token * (i + 1) + 0.001f * pos;
}

// Decodes tokens[pos0 ..) for seq through every recurrent layer, keeping snapshots as asked.
void decode(RecurrentState& rs, int seq, const std::vector<int32_t>& tokens, int32_t pos0,
            int64_t n) {
  rs.begin_rows(seq, pos0, n);
  for (int64_t layer : {0, 2}) {
    const RecurrentState::Rows r = rs.rows(layer, seq);
    for (int64_t t = 0; t < n; ++t) {
      step(r.conv, r.state, tokens[pos0 + t], pos0 + static_cast<int32_t>(t));
      if (float* c = (*r.conv_snap)[t]) std::memcpy(c, r.conv, kConv * sizeof(float));
      if (float* s = (*r.state_snap)[t]) std::memcpy(s, r.state, kState * sizeof(float));
    }
  }
  rs.end_rows(seq, pos0, n);
}

std::vector<float> planes(RecurrentState& rs, int seq) {
  rs.begin_rows(seq, rs.next_pos(seq), 0);
  std::vector<float> out;
  for (int64_t layer : {0, 2}) {
    const RecurrentState::Rows r = rs.rows(layer, seq);
    out.insert(out.end(), r.conv, r.conv + kConv);
    out.insert(out.end(), r.state, r.state + kState);
  }
  return out;
}

// The state after tokens [0, n) decoded one at a time in a fresh memory.
std::vector<float> reference(const std::vector<int32_t>& tokens, int32_t n) {
  RecurrentState rs({{kConv, kState}, {}, {kConv, kState}}, 1, 0);
  for (int32_t p = 0; p < n; ++p) decode(rs, 0, tokens, p, 1);
  return planes(rs, 0);
}

RecurrentState make(int n_seq, int n_snap) {
  return RecurrentState({{kConv, kState}, {}, {kConv, kState}}, n_seq, n_snap);
}

const std::vector<int32_t> kTokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};

TEST(RecurrentState, RollbackInsideTheLastDecodeIsExact) {
  for (int32_t keep = 5; keep <= 9; ++keep) {
    RecurrentState rs = make(2, 5);
    decode(rs, 1, kTokens, 0, 5);  // prefill
    decode(rs, 1, kTokens, 5, 4);  // a verification batch of 4 rows
    ASSERT_TRUE(rs.can_rm(1, keep, -1)) << keep;
    ASSERT_TRUE(rs.seq_rm(1, keep, -1)) << keep;
    EXPECT_EQ(rs.next_pos(1), keep);
    EXPECT_EQ(planes(rs, 1), reference(kTokens, keep)) << "rolled back to " << keep;
    // And decoding on from there continues the shorter history exactly.
    decode(rs, 1, kTokens, keep, 3);
    EXPECT_EQ(planes(rs, 1), reference(kTokens, keep + 3));
  }
}

TEST(RecurrentState, SnapshotsSpanConsecutiveDecodes) {
  RecurrentState rs = make(1, 4);
  decode(rs, 0, kTokens, 0, 6);
  decode(rs, 0, kTokens, 6, 1);
  decode(rs, 0, kTokens, 7, 1);
  // The planes hold the states after positions 4..7: rollback to 5..8 works.
  for (int32_t keep : {5, 6}) {
    RecurrentState copy = make(1, 4);
    decode(copy, 0, kTokens, 0, 6);
    decode(copy, 0, kTokens, 6, 1);
    decode(copy, 0, kTokens, 7, 1);
    ASSERT_TRUE(copy.seq_rm(0, keep, -1)) << keep;
    EXPECT_EQ(planes(copy, 0), reference(kTokens, keep));
  }
  EXPECT_FALSE(rs.can_rm(0, 4, -1)) << "the state after position 3 was not kept";
}

TEST(RecurrentState, RollbackBeyondTheSnapshotsIsRefusedAndChangesNothing) {
  RecurrentState rs = make(1, 3);
  decode(rs, 0, kTokens, 0, 8);
  const std::vector<float> before = planes(rs, 0);
  EXPECT_FALSE(rs.can_rm(0, 4, -1));
  EXPECT_FALSE(rs.seq_rm(0, 4, -1));
  EXPECT_FALSE(rs.seq_rm(0, 2, 5)) << "a hole in the middle of a recurrent history";
  EXPECT_EQ(rs.next_pos(0), 8);
  EXPECT_EQ(planes(rs, 0), before);
  // Whole-sequence removal always works and restarts from zero.
  EXPECT_TRUE(rs.seq_rm(0, 0, -1));
  EXPECT_EQ(rs.next_pos(0), 0);
  decode(rs, 0, kTokens, 0, 4);
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 4));
  // Removing nothing (at or past the end) is a no-op that succeeds.
  EXPECT_TRUE(rs.seq_rm(0, 4, -1));
  EXPECT_TRUE(rs.seq_rm(0, 9, -1));
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 4));
}

TEST(RecurrentState, NoSnapshotsMeansNoPartialRollback) {
  RecurrentState rs = make(1, 0);
  decode(rs, 0, kTokens, 0, 5);
  EXPECT_FALSE(rs.can_rm(0, 4, -1));
  EXPECT_TRUE(rs.can_rm(0, 0, -1));
}

TEST(RecurrentState, SequencesContinueInOrder) {
  RecurrentState rs = make(2, 2);
  decode(rs, 0, kTokens, 0, 3);
  EXPECT_THROW(rs.begin_rows(0, 5, 1), Error) << "a gap";
  EXPECT_THROW(rs.begin_rows(0, 1, 1), Error) << "a position already folded in";
  EXPECT_EQ(rs.next_pos(0), 3);
}

TEST(RecurrentState, SlotsAreLimitedAndFreedWithTheirSequence) {
  RecurrentState rs = make(2, 2);
  decode(rs, 3, kTokens, 0, 2);
  decode(rs, 7, kTokens, 0, 2);
  try {
    rs.begin_rows(9, 0, 1);
    FAIL() << "a third sequence fit in two slots";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all 2 sequence slots"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(rs.seq_rm(3, 0, -1));
  decode(rs, 9, kTokens, 0, 3);
  EXPECT_EQ(planes(rs, 9), reference(kTokens, 3)) << "a reused slot starts from zero";
}

TEST(RecurrentState, CopyAndKeep) {
  RecurrentState rs = make(3, 2);
  decode(rs, 0, kTokens, 0, 6);
  rs.seq_cp(0, 1);
  EXPECT_EQ(rs.next_pos(1), 6);
  EXPECT_EQ(planes(rs, 1), planes(rs, 0));
  decode(rs, 1, kTokens, 6, 2);
  EXPECT_EQ(planes(rs, 1), reference(kTokens, 8));
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 6)) << "the copy is independent";
  EXPECT_TRUE(rs.can_rm(1, 7, -1));
  EXPECT_FALSE(rs.can_rm(1, 6, -1)) << "snapshots from before the copy are not copied";
  rs.seq_keep(1);
  EXPECT_EQ(rs.next_pos(0), 0);
  EXPECT_EQ(rs.next_pos(1), 8);
  rs.clear();
  EXPECT_EQ(rs.next_pos(1), 0);
}

TEST(RecurrentState, ModelsWithoutRecurrentLayersCanAlwaysRollBack) {
  RecurrentState rs({{}, {}}, 1, 0);
  EXPECT_TRUE(rs.empty());
  EXPECT_TRUE(rs.can_rm(0, 3, -1));
  EXPECT_TRUE(rs.seq_rm(5, 1, 2));
}

// A checkpoint restores its position however far back, once; a rollback before it, or
// removing the sequence, drops it; snapshots still win inside the last decode.
TEST(RecurrentState, ACheckpointRestoresItsPositionFromAnyDistance) {
  RecurrentState rs = make(2, 3);
  decode(rs, 0, kTokens, 0, 4);  // the snapshots cover 2..4
  EXPECT_FALSE(rs.can_rm(0, 1, -1));
  rs.checkpoint(0);  // after [0, 4)
  decode(rs, 0, kTokens, 4, 3);
  decode(rs, 0, kTokens, 7, 5);  // the snapshots now cover 10..12
  EXPECT_FALSE(rs.can_rm(0, 5, -1));
  ASSERT_TRUE(rs.seq_rm(0, 4, -1));
  EXPECT_EQ(rs.next_pos(0), 4);
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 4));
  decode(rs, 0, kTokens, 4, 6);
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 10));
  // Still there after decoding on from it (the history before 4 did not change).
  ASSERT_TRUE(rs.seq_rm(0, 4, -1));
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 4));
  // A rollback before it drops it: positions >= 1 now follow another history.
  decode(rs, 0, kTokens, 4, 2);
  rs.checkpoint(0);  // after [0, 6)
  decode(rs, 0, kTokens, 6, 1);
  ASSERT_TRUE(rs.seq_rm(0, 5, -1));  // a snapshot, before the checkpoint
  EXPECT_EQ(planes(rs, 0), reference(kTokens, 5));
  decode(rs, 0, kTokens, 5, 4);
  EXPECT_FALSE(rs.can_rm(0, 6, -1));
  // Removing the sequence drops it too.
  rs.checkpoint(0);  // after [0, 9)
  ASSERT_TRUE(rs.seq_rm(0, 0, -1));
  decode(rs, 0, kTokens, 0, 12);
  EXPECT_FALSE(rs.can_rm(0, 9, -1));
}

}  // namespace
}  // namespace fulgur
