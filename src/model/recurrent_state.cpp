#include "model/recurrent_state.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace fulgur {

RecurrentState::RecurrentState(std::vector<LayerSize> layers, int n_seq_max, int n_snapshots)
    : layers_(std::move(layers)),
      n_seq_max_(n_seq_max),
      n_snap_(n_snapshots),
      seqs_(kMaxSequences) {
  FULGUR_CHECK(n_seq_max >= 1 && n_seq_max <= kMaxSequences && n_snapshots >= 0,
               "recurrent state: ", n_seq_max, " sequences and ", n_snapshots,
               " snapshots (need 1..", kMaxSequences, " sequences, >= 0 snapshots)");
  const int64_t planes = 2 + n_snap_;  // current, snapshots, checkpoint
  for (const LayerSize& l : layers_) {
    layer_off_.push_back(slot_floats_);
    // Each plane starts on a 64-byte boundary, so SIMD kernels may use aligned loads.
    const auto aligned = [](int64_t floats) { return (floats + 15) / 16 * 16; };
    slot_floats_ += planes * (aligned(l.conv) + aligned(l.state));
    n_recurrent_ += l.conv > 0 || l.state > 0;
  }
  if (n_recurrent_ == 0) return;
  mem_ = PageBuffer(static_cast<size_t>(slot_floats_) * n_seq_max_ * sizeof(float));
  slot_used_.assign(static_cast<size_t>(n_seq_max_), false);
}

float* RecurrentState::conv_plane(int64_t layer, int slot, int p) {
  const LayerSize& l = layers_[static_cast<size_t>(layer)];
  const int64_t conv = (l.conv + 15) / 16 * 16;
  float* base = reinterpret_cast<float*>(mem_.data()) + slot * slot_floats_ + layer_off_[layer];
  return base + p * conv;
}

float* RecurrentState::state_plane(int64_t layer, int slot, int p) {
  const LayerSize& l = layers_[static_cast<size_t>(layer)];
  const int64_t conv = (l.conv + 15) / 16 * 16, state = (l.state + 15) / 16 * 16;
  float* base = reinterpret_cast<float*>(mem_.data()) + slot * slot_floats_ + layer_off_[layer];
  return base + (2 + n_snap_) * conv + p * state;
}

int32_t RecurrentState::next_pos(int seq) const {
  FULGUR_CHECK(valid_seq(seq), "recurrent state: sequence id ", seq, " is out of range");
  return seqs_[seq].next;
}

void RecurrentState::zero(int slot) {
  for (size_t l = 0; l < layers_.size(); ++l) {
    std::memset(conv_plane(static_cast<int64_t>(l), slot, 0), 0, layers_[l].conv * sizeof(float));
    std::memset(state_plane(static_cast<int64_t>(l), slot, 0), 0, layers_[l].state * sizeof(float));
  }
}

void RecurrentState::release(Seq& s) {
  if (s.slot >= 0) slot_used_[static_cast<size_t>(s.slot)] = false;
  s = Seq{};
}

void RecurrentState::begin_rows(int seq, int32_t pos0, int64_t n) {
  if (empty()) return;
  FULGUR_CHECK(valid_seq(seq), "recurrent state: sequence id ", seq, " is out of range");
  Seq& s = seqs_[seq];
  FULGUR_CHECK(pos0 == s.next, "sequence ", seq, " continues at position ", pos0,
               ", but its recurrent state holds positions [0, ", s.next,
               "): a recurrent model decodes each sequence in order (remove positions with "
               "seq_rm first)");
  if (s.slot < 0) {
    const auto free = std::find(slot_used_.begin(), slot_used_.end(), false);
    FULGUR_CHECK(free != slot_used_.end(), "sequence ", seq, " needs recurrent state, but all ",
                 n_seq_max_, " sequence slots are in use (raise the parallel sequences)");
    s.slot = static_cast<int>(free - slot_used_.begin());
    *free = true;
    zero(s.slot);
  }
  s.rows_pos0 = pos0;
  s.rows_n = n;
}

void RecurrentState::end_rows(int seq, int32_t pos0, int64_t n) {
  if (empty()) return;
  Seq& s = seqs_[seq];
  const int32_t end = pos0 + static_cast<int32_t>(n);
  const int32_t first_kept = std::max(pos0, end - n_snap_);
  // Earlier snapshots stay valid when these rows continue them: their ring entries are not
  // overwritten (an entry is reused n_snap positions later, at or past `end`).
  s.snap_lo = s.snap_hi == pos0 ? std::max(s.snap_lo, end - n_snap_) : first_kept;
  s.snap_hi = end;
  if (n_snap_ == 0) s.snap_lo = s.snap_hi;
  s.next = end;
}

RecurrentState::Rows RecurrentState::rows(int64_t layer, int seq) {
  Seq& s = seqs_[seq];
  FULGUR_CHECK(s.slot >= 0, "recurrent state: rows() of sequence ", seq, " before begin_rows()");
  conv_snap_.assign(static_cast<size_t>(s.rows_n), nullptr);
  state_snap_.assign(static_cast<size_t>(s.rows_n), nullptr);
  const int32_t end = s.rows_pos0 + static_cast<int32_t>(s.rows_n);
  for (int32_t p = std::max(s.rows_pos0, end - n_snap_); p < end; ++p) {
    const int ring = 1 + p % n_snap_;
    conv_snap_[p - s.rows_pos0] = conv_plane(layer, s.slot, ring);
    state_snap_[p - s.rows_pos0] = state_plane(layer, s.slot, ring);
  }
  return {conv_plane(layer, s.slot, 0), state_plane(layer, s.slot, 0), &conv_snap_, &state_snap_};
}

bool RecurrentState::restorable(const Seq& s, int32_t p0) const {
  // The state after positions [0, p0): nothing to do, a fresh state, a snapshot or the
  // checkpoint.
  return p0 >= s.next || p0 <= 0 || (p0 - 1 >= s.snap_lo && p0 - 1 < s.snap_hi) || p0 == s.checkpoint;
}

void RecurrentState::copy_planes(int slot, int from, int to) {
  for (size_t l = 0; l < layers_.size(); ++l) {
    const int64_t L = static_cast<int64_t>(l);
    std::memcpy(conv_plane(L, slot, to), conv_plane(L, slot, from), layers_[l].conv * sizeof(float));
    std::memcpy(state_plane(L, slot, to), state_plane(L, slot, from), layers_[l].state * sizeof(float));
  }
}

void RecurrentState::checkpoint(int seq) {
  if (empty()) return;
  FULGUR_CHECK(valid_seq(seq), "recurrent state: sequence id ", seq, " is out of range");
  Seq& s = seqs_[seq];
  if (s.slot < 0 || s.next == 0) return;  // a fresh state needs no copy
  copy_planes(s.slot, 0, 1 + n_snap_);
  s.checkpoint = s.next;
}

void RecurrentState::restore(Seq& s, int32_t p0) {
  if (p0 >= s.next) return;
  if (p0 <= 0) {
    release(s);
    return;
  }
  const bool in_snapshots = p0 - 1 >= s.snap_lo && p0 - 1 < s.snap_hi;
  copy_planes(s.slot, in_snapshots ? 1 + (p0 - 1) % n_snap_ : 1 + n_snap_, 0);
  s.next = p0;
  // The snapshots past p0 belonged to the removed rows; so does a checkpoint past it.
  s.snap_hi = p0;
  if (!in_snapshots) s.snap_lo = p0;
  if (s.checkpoint > p0) s.checkpoint = 0;
}

bool RecurrentState::can_rm(int seq, int32_t p0, int32_t p1) const {
  if (empty()) return true;
  const auto ok = [&](const Seq& s) {
    if (p1 >= 0 && p1 < s.next && p0 < p1) return false;  // a hole in the middle
    return restorable(s, std::max<int32_t>(p0, 0));
  };
  if (seq < 0) return std::all_of(seqs_.begin(), seqs_.end(), ok);
  return valid_seq(seq) && ok(seqs_[seq]);
}

bool RecurrentState::seq_rm(int seq, int32_t p0, int32_t p1) {
  if (!can_rm(seq, p0, p1)) return false;
  if (empty()) return true;
  if (seq < 0) {
    for (Seq& s : seqs_) restore(s, std::max<int32_t>(p0, 0));
  } else {
    restore(seqs_[seq], std::max<int32_t>(p0, 0));
  }
  return true;
}

void RecurrentState::seq_cp(int src, int dst) {
  if (empty() || src == dst) return;
  FULGUR_CHECK(valid_seq(src) && valid_seq(dst), "recurrent state: sequence ids ", src, ", ", dst,
               " are out of range");
  Seq& d = seqs_[dst];
  const Seq& s = seqs_[src];
  release(d);
  if (s.slot < 0) return;
  begin_rows(dst, 0, 0);  // takes a slot
  for (size_t l = 0; l < layers_.size(); ++l) {
    const int64_t L = static_cast<int64_t>(l);
    std::memcpy(conv_plane(L, d.slot, 0), conv_plane(L, s.slot, 0), layers_[l].conv * sizeof(float));
    std::memcpy(state_plane(L, d.slot, 0), state_plane(L, s.slot, 0), layers_[l].state * sizeof(float));
  }
  d.next = s.next;
  d.snap_lo = d.snap_hi = s.next;  // snapshots are not copied
}

void RecurrentState::move_planes(int slot, int p, std::vector<float>& out, const float** in) {
  for (size_t l = 0; l < layers_.size(); ++l) {
    const int64_t L = static_cast<int64_t>(l);
    float* conv = conv_plane(L, slot, p);
    float* state = state_plane(L, slot, p);
    if (in == nullptr) {
      out.insert(out.end(), conv, conv + layers_[l].conv);
      out.insert(out.end(), state, state + layers_[l].state);
    } else {
      std::memcpy(conv, *in, layers_[l].conv * sizeof(float));
      *in += layers_[l].conv;
      std::memcpy(state, *in, layers_[l].state * sizeof(float));
      *in += layers_[l].state;
    }
  }
}

RecurrentState::SeqCopy RecurrentState::copy_seq(int seq) {
  SeqCopy c;
  if (empty()) return c;
  FULGUR_CHECK(valid_seq(seq), "recurrent state: sequence id ", seq, " is out of range");
  const Seq& s = seqs_[seq];
  if (s.slot < 0) return c;
  c.next = s.next;
  c.checkpoint = s.checkpoint;
  move_planes(s.slot, 0, c.planes, nullptr);
  if (c.checkpoint > 0) move_planes(s.slot, 1 + n_snap_, c.planes, nullptr);
  return c;
}

bool RecurrentState::fits(const SeqCopy& copy) const {
  int64_t plane = 0;
  for (const LayerSize& l : layers_) plane += l.conv + l.state;
  if (copy.next == 0) return copy.planes.empty();
  return static_cast<int64_t>(copy.planes.size()) == plane * (copy.checkpoint > 0 ? 2 : 1);
}

void RecurrentState::paste_seq(int seq, const SeqCopy& copy) {
  FULGUR_CHECK(fits(copy), "a copied recurrent state of another model's layout was given to this context");
  if (empty()) return;
  FULGUR_CHECK(valid_seq(seq), "recurrent state: sequence id ", seq, " is out of range");
  Seq& s = seqs_[seq];
  if (copy.next == 0) {
    release(s);
    return;
  }
  const bool has_slot = s.slot >= 0 || std::find(slot_used_.begin(), slot_used_.end(), false) != slot_used_.end();
  FULGUR_CHECK(has_slot, "sequence ", seq, " needs recurrent state, but all ", n_seq_max_,
               " sequence slots are in use (raise the parallel sequences)");
  release(s);
  begin_rows(seq, 0, 0);  // takes a slot
  const float* in = copy.planes.data();
  std::vector<float> unused;
  move_planes(s.slot, 0, unused, &in);
  if (copy.checkpoint > 0) move_planes(s.slot, 1 + n_snap_, unused, &in);
  s.next = copy.next;
  s.snap_lo = s.snap_hi = copy.next;
  s.checkpoint = copy.checkpoint;
}

void RecurrentState::seq_keep(int seq) {
  for (int q = 0; q < kMaxSequences; ++q) {
    if (q != seq) release(seqs_[q]);
  }
}

void RecurrentState::clear() {
  for (Seq& s : seqs_) release(s);
}

}  // namespace fulgur
