// Encoders of the codebook types IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS and IQ2_S (and, at the end,
// IQ1_S and IQ1_M, whose values are not split into signs and magnitudes). Each stores a
// sub-block of 32 (or 16) elements as: one 4-bit scale ls, so that the sub-block's scale is
// S = D * (2 ls + 1) for the super-block's D; per group of 4 or 8 elements the index of a
// codebook entry (its magnitudes); per group of 8 the signs. The magnitudes are all positive, so
// the signs are taken from x and the search runs on |x|.
//
// The search (after ggml's idea, not its code): for a candidate scale s, every group rounds
// |x| / s coordinate by coordinate to the nearest magnitude level. That point is the best the
// group can do at s when it is an entry of the codebook; when it is not, the best entry is among
// a few nearby ones, which a table built once per codebook lists for every off-codebook point
// (the entries in its nearest distance shells). Trying a range of s, each refit by least
// squares, gives a sub-block's indices and continuous scale. The super-block's D is then searched
// with the indices fixed (the error of each sub-block is a quadratic in its S), and every group
// is snapped again at its final, quantized S, keeping whichever entry has the lower error.
//
// The error minimised is sum w_j (|x_j| - S m_j)^2 with w the importance weights (quants.cpp's
// quantize_row_weighted) or, without them, x_j^2 as ggml does for these types (large values
// matter most). Types with 7-bit sign indices (IQ3_XXS, IQ2_XXS, IQ2_XS) can only store an even
// count of negatives per 8: when x has an odd count, the element that costs least (smallest
// w x^2) is encoded with the wrong sign, as a value of -|x| to be approximated by magnitudes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/fp16.h"
#include "tensor/blocks.h"
#include "tensor/iq_grids.h"
#include "tensor/quants_impl.h"

namespace fulgur::detail {
namespace {

// A codebook with its lookup tables, as the encoder needs it.
struct Codebook {
  int width = 0;                // elements per entry: 4 or 8
  int n_entries = 0;
  std::vector<int8_t> mag;      // [n_entries * width] values (magnitudes; IQ1: -1, 0, 1)
  std::vector<float> levels;    // the distinct values, ascending
  std::vector<float> bounds;    // [levels - 1] midpoints between neighbouring levels
  // Per point of the level lattice (coordinate i's level rank times levels^i): the entry index
  // (>= 0) for a point of the codebook, else -(1 + offset) of its neighbour list in `near`
  // (a count, then that many entry indices).
  std::vector<int32_t> slot;
  std::vector<uint16_t> near;
};

template <class Entry>
Codebook build_codebook(const Entry* grid, int n_entries, int shells) {
  Codebook cb;
  cb.width = static_cast<int>(sizeof(Entry));
  cb.n_entries = n_entries;
  cb.mag.resize(static_cast<size_t>(n_entries * cb.width));
  for (int e = 0; e < n_entries; ++e) std::memcpy(&cb.mag[static_cast<size_t>(e * cb.width)], &grid[e], sizeof(Entry));
  std::vector<int8_t> distinct(cb.mag);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int8_t m : distinct) cb.levels.push_back(m);
  for (size_t i = 0; i + 1 < cb.levels.size(); ++i) cb.bounds.push_back(0.5f * (cb.levels[i] + cb.levels[i + 1]));

  const int n_levels = static_cast<int>(cb.levels.size());
  int n_points = 1;
  for (int i = 0; i < cb.width; ++i) n_points *= n_levels;
  cb.slot.assign(static_cast<size_t>(n_points), -1);
  auto rank_of = [&](int8_t m) {
    return static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), m) - distinct.begin());
  };
  for (int e = 0; e < n_entries; ++e) {
    int point = 0;
    for (int i = cb.width - 1; i >= 0; --i) point = point * n_levels + rank_of(cb.mag[static_cast<size_t>(e * cb.width + i)]);
    cb.slot[static_cast<size_t>(point)] = e;
  }
  // Neighbour lists of the other points: every entry whose distance is among the `shells`
  // smallest distinct distances (more shells: a better pick, a slower search).
  std::vector<int> d2(static_cast<size_t>(n_entries));
  std::vector<int> coord(static_cast<size_t>(cb.width));
  for (int p = 0; p < n_points; ++p) {
    if (cb.slot[static_cast<size_t>(p)] >= 0) continue;
    for (int i = 0, r = p; i < cb.width; ++i, r /= n_levels) coord[static_cast<size_t>(i)] = distinct[static_cast<size_t>(r % n_levels)];
    std::vector<int> shell;  // the smallest distinct distances, ascending
    for (int e = 0; e < n_entries; ++e) {
      int s = 0;
      for (int i = 0; i < cb.width; ++i) {
        const int diff = cb.mag[static_cast<size_t>(e * cb.width + i)] - coord[static_cast<size_t>(i)];
        s += diff * diff;
      }
      d2[static_cast<size_t>(e)] = s;
      if (std::find(shell.begin(), shell.end(), s) != shell.end()) continue;
      shell.insert(std::upper_bound(shell.begin(), shell.end(), s), s);
      if (static_cast<int>(shell.size()) > shells) shell.pop_back();
    }
    const int limit = shell.back();
    cb.slot[static_cast<size_t>(p)] = -(1 + static_cast<int32_t>(cb.near.size()));
    const size_t count_at = cb.near.size();
    cb.near.push_back(0);
    for (int e = 0; e < n_entries; ++e) {
      if (d2[static_cast<size_t>(e)] <= limit) cb.near.push_back(static_cast<uint16_t>(e));
    }
    cb.near[count_at] = static_cast<uint16_t>(cb.near.size() - count_at - 1);
  }
  return cb;
}

// Built on first use (thread-safe statics): a few milliseconds each, IQ2_S's the largest.
const Codebook& iq3xxs_book() {
  static const Codebook cb = build_codebook(kIq3xxsGrid, 256, 2);
  return cb;
}
const Codebook& iq3s_book() {
  static const Codebook cb = build_codebook(kIq3sGrid, 512, 3);
  return cb;
}
const Codebook& iq2xxs_book() {
  static const Codebook cb = build_codebook(kIq2xxsGrid, 256, 2);
  return cb;
}
const Codebook& iq2xs_book() {
  static const Codebook cb = build_codebook(kIq2xsGrid, 512, 2);
  return cb;
}
const Codebook& iq2s_book() {
  static const Codebook cb = build_codebook(kIq2sGrid, 1024, 2);
  return cb;
}

// Rank of the level nearest v (NaN: the lowest).
int nearest_level(const Codebook& cb, float v) {
  int r = 0;
  while (r < static_cast<int>(cb.bounds.size()) && v > cb.bounds[static_cast<size_t>(r)]) ++r;
  return r;
}

// sum w (a - s (m + shift))^2 over the group; shift is IQ1's +-1/8, 0 for the other types.
double group_error(const Codebook& cb, int entry, const float* a, const float* w, float s, float shift = 0.0f) {
  const int8_t* m = &cb.mag[static_cast<size_t>(entry * cb.width)];
  double e = 0;
  for (int i = 0; i < cb.width; ++i) {
    const double diff = a[i] - static_cast<double>(s) * (m[i] + shift);
    e += w[i] * diff * diff;
  }
  return e;
}

// The entry for the group a[width] (magnitudes, weights w) at scale s: the nearest lattice point
// when it is in the codebook, else the best of its listed neighbours under the weighted error.
int snap_group(const Codebook& cb, const float* a, const float* w, float s, float shift = 0.0f) {
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  const int n_levels = static_cast<int>(cb.levels.size());
  int point = 0;
  for (int i = cb.width - 1; i >= 0; --i) point = point * n_levels + nearest_level(cb, a[i] * inv - shift);
  const int32_t slot = cb.slot[static_cast<size_t>(point)];
  if (slot >= 0) return slot;
  const uint16_t* list = &cb.near[static_cast<size_t>(-slot - 1)];
  int best = list[1];
  double best_e = std::numeric_limits<double>::infinity();
  for (int k = 1; k <= list[0]; ++k) {
    const double e = group_error(cb, list[k], a, w, s, shift);
    if (e < best_e) {
      best_e = e;
      best = list[k];
    }
  }
  return best;
}

// Sums of the least-squares scale of n magnitudes a (weights w) against the entries idx.
struct Fit {
  double qx = 0, q2 = 0;  // sum w a m, sum w m^2
};
Fit fit_of(const Codebook& cb, const float* a, const float* w, int n, const uint16_t* idx) {
  Fit f;
  for (int g = 0; g < n / cb.width; ++g) {
    const int8_t* m = &cb.mag[static_cast<size_t>(idx[g] * cb.width)];
    for (int i = 0; i < cb.width; ++i) {
      const int j = g * cb.width + i;
      f.qx += static_cast<double>(w[j]) * a[j] * m[i];
      f.q2 += static_cast<double>(w[j]) * m[i] * m[i];
    }
  }
  return f;
}

// Indices idx[n / width] and the continuous scale (>= 0) of one scale sub-block of n magnitudes.
float fit_sub_block(const Codebook& cb, const float* a, const float* w, int n, uint16_t* idx) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, a[j]);
  const int groups = n / cb.width;
  uint16_t trial[32];  // [groups]
  for (int g = 0; g < groups; ++g) idx[g] = static_cast<uint16_t>(snap_group(cb, a + g * cb.width, w + g * cb.width, 0.0f));
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;
  // Candidate scales put amax around the top level, from 20 % past it to 20 % short of it.
  constexpr int kSteps = 15;
  constexpr float kStep = 0.2f / kSteps;
  double best_q = -1;
  float scale = 0.0f;
  auto consider = [&](const uint16_t* cand) {
    const Fit f = fit_of(cb, a, w, n, cand);
    // With the refit scale qx/q2 the error falls by qx^2/q2: maximise it (a positive scale only).
    if (f.q2 > 0 && f.qx > 0 && f.qx * f.qx / f.q2 > best_q) {
      best_q = f.qx * f.qx / f.q2;
      scale = static_cast<float>(f.qx / f.q2);
      std::copy(cand, cand + groups, idx);
      return true;
    }
    return false;
  };
  for (int t = -kSteps; t <= kSteps; ++t) {
    const float s = amax / (cb.levels.back() * (1.0f + kStep * static_cast<float>(t)));
    for (int g = 0; g < groups; ++g) trial[g] = static_cast<uint16_t>(snap_group(cb, a + g * cb.width, w + g * cb.width, s));
    consider(trial);
  }
  // Snapping again at the refit scale moves groups that were rounded for another scale.
  for (int iter = 0; iter < 2 && scale > 0.0f; ++iter) {
    for (int g = 0; g < groups; ++g) trial[g] = static_cast<uint16_t>(snap_group(cb, a + g * cb.width, w + g * cb.width, scale));
    if (!consider(trial)) break;
  }
  return scale;
}

// The layout-independent encoding of one super-block.
struct SuperBlock {
  float d = 0.0f;         // the f16 value stored (before the type's constant factor)
  uint8_t ls[16] = {};    // [256 / sub] 4-bit scales
  uint16_t idx[64] = {};  // [256 / width] codebook entries
  uint8_t signs[32] = {}; // [32] bit j set: element j of the group of 8 is negative
};

struct Scheme {
  const Codebook& (*book)();
  int sub;           // elements per 4-bit scale: 32 or 16
  bool even_signs;   // signs stored as 7-bit indices: an even count of negatives per 8
  float factor;      // S = d * factor * (2 ls + 1)
};

// Signs and magnitudes of 8 elements; with even_signs, the cheapest element takes the wrong sign
// when the count of negatives is odd (its magnitude a becomes -|x|).
uint8_t split_signs(const float* x, const float* w, bool even_signs, float* a) {
  uint8_t s = 0;
  for (int i = 0; i < 8; ++i) {
    a[i] = std::fabs(x[i]);
    if (x[i] < 0.0f) s = static_cast<uint8_t>(s | (1 << i));
  }
  if (even_signs && (__builtin_popcount(s) & 1) != 0) {
    int cheapest = 0;
    for (int i = 1; i < 8; ++i) {
      if (w[i] * a[i] * a[i] < w[cheapest] * a[cheapest] * a[cheapest]) cheapest = i;
    }
    a[cheapest] = -a[cheapest];
    s = static_cast<uint8_t>(s ^ (1 << cheapest));
  }
  return s;
}

// The weights the search minimises under, for one super-block: the caller's when it gave any
// positive one, else x^2, else (an all-zero block) 1 each.
void block_weights(const float* x, const float* w, float* out) {
  const float* given = usable_weights(w, kQK_K);
  bool any = false;
  for (int j = 0; j < kQK_K; ++j) {
    out[j] = given != nullptr ? std::max(given[j], 0.0f) : x[j] * x[j];
    any = any || out[j] > 0.0f;
  }
  if (!any) std::fill(out, out + kQK_K, 1.0f);
}

SuperBlock encode_super_block(const Scheme& sc, const float* x, const float* w_in) {
  const Codebook& cb = sc.book();
  SuperBlock sb;
  float w[kQK_K], a[kQK_K];
  block_weights(x, w_in, w);
  for (int g = 0; g < kQK_K / 8; ++g) sb.signs[g] = split_signs(x + 8 * g, w + 8 * g, sc.even_signs, a + 8 * g);

  const int n_sub = kQK_K / sc.sub, per_sub = sc.sub / cb.width;
  float scale[16];
  double qx[16], q2[16];
  float max_scale = 0.0f;
  for (int ib = 0; ib < n_sub; ++ib) {
    const int o = ib * sc.sub;
    scale[ib] = fit_sub_block(cb, a + o, w + o, sc.sub, sb.idx + ib * per_sub);
    const Fit f = fit_of(cb, a + o, w + o, sc.sub, sb.idx + ib * per_sub);
    qx[ib] = f.qx;
    q2[ib] = f.q2;
    max_scale = std::max(max_scale, scale[ib]);
  }
  if (!(max_scale > 0.0f) || !std::isfinite(max_scale)) return sb;  // d = 0: all zero

  // D with the indices fixed: sub-block ib's error is const - 2 S qx + S^2 q2 for S = D (2 ls + 1);
  // try D around max_scale / 31 (the largest scale at the top odd level), each rounded to f16.
  double best_err = std::numeric_limits<double>::infinity();
  for (int t = -12; t <= 12; ++t) {
    const float d = f16_to_f32(f32_to_f16(max_scale / 31.0f * (1.0f + 0.01f * static_cast<float>(t)) / sc.factor));
    const double D = static_cast<double>(d) * sc.factor;
    if (!(D > 0)) continue;
    double err = 0;
    uint8_t ls[16];
    for (int ib = 0; ib < n_sub; ++ib) {
      double best = std::numeric_limits<double>::infinity();
      const int guess = round_clamp(static_cast<float>((scale[ib] / D - 1.0) / 2.0), 0, 15);
      for (int l = std::max(0, guess - 1); l <= std::min(15, guess + 1); ++l) {
        const double S = D * (2 * l + 1);
        const double e = S * S * q2[ib] - 2 * S * qx[ib];
        if (e < best) {
          best = e;
          ls[ib] = static_cast<uint8_t>(l);
        }
      }
      err += best;
    }
    if (err < best_err) {
      best_err = err;
      sb.d = d;
      std::copy(ls, ls + n_sub, sb.ls);
    }
  }
  // Each group again at its final scale: the entry with the lower error of the two.
  for (int ib = 0; ib < n_sub; ++ib) {
    const float S = static_cast<float>(static_cast<double>(sb.d) * sc.factor * (2 * sb.ls[ib] + 1));
    for (int k = 0; k < per_sub; ++k) {
      const int o = ib * sc.sub + k * cb.width;
      uint16_t& e = sb.idx[ib * per_sub + k];
      const int cand = snap_group(cb, a + o, w + o, S);
      if (group_error(cb, cand, a + o, w + o, S) < group_error(cb, e, a + o, w + o, S)) e = static_cast<uint16_t>(cand);
    }
  }
  return sb;
}

constexpr Scheme kIq3xxs{iq3xxs_book, 32, true, 0.25f};
constexpr Scheme kIq3s{iq3s_book, 32, false, 1.0f};
constexpr Scheme kIq2xxs{iq2xxs_book, 32, true, 0.125f};
constexpr Scheme kIq2xs{iq2xs_book, 16, true, 0.125f};
constexpr Scheme kIq2s{iq2s_book, 16, false, 0.125f};

// The 7-bit sign index of an even-parity sign byte (its eighth bit follows from the others).
uint32_t sign7(uint8_t s) { return s & 127u; }

void pack_iq3_xxs(const SuperBlock& sb, BlockIQ3_XXS& b) {
  b.d = f32_to_f16(sb.d);
  for (int ib = 0; ib < 8; ++ib) {
    for (int k = 0; k < 8; ++k) b.qs[8 * ib + k] = static_cast<uint8_t>(sb.idx[8 * ib + k]);
    uint32_t aux = static_cast<uint32_t>(sb.ls[ib]) << 28;
    for (int l = 0; l < 4; ++l) aux |= sign7(sb.signs[4 * ib + l]) << (7 * l);
    std::memcpy(b.qs + kQK_K / 4 + 4 * ib, &aux, 4);
  }
}

void pack_iq3_s(const SuperBlock& sb, BlockIQ3_S& b) {
  std::memset(&b, 0, sizeof(b));
  b.d = f32_to_f16(sb.d);
  for (int ib = 0; ib < 8; ++ib) {
    for (int k = 0; k < 8; ++k) {
      const uint16_t e = sb.idx[8 * ib + k];
      b.qs[8 * ib + k] = static_cast<uint8_t>(e & 255);
      b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | ((e >> 8) << k));
    }
    b.scales[ib / 2] = static_cast<uint8_t>(b.scales[ib / 2] | (sb.ls[ib] << (4 * (ib % 2))));
  }
  std::memcpy(b.signs, sb.signs, sizeof(b.signs));
}

void pack_iq2_xxs(const SuperBlock& sb, BlockIQ2_XXS& b) {
  b.d = f32_to_f16(sb.d);
  auto* q = reinterpret_cast<uint8_t*>(b.qs);
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) q[8 * ib + l] = static_cast<uint8_t>(sb.idx[4 * ib + l]);
    uint32_t aux = static_cast<uint32_t>(sb.ls[ib]) << 28;
    for (int l = 0; l < 4; ++l) aux |= sign7(sb.signs[4 * ib + l]) << (7 * l);
    std::memcpy(q + 8 * ib + 4, &aux, 4);
  }
}

void pack_iq2_xs(const SuperBlock& sb, BlockIQ2_XS& b) {
  b.d = f32_to_f16(sb.d);
  for (int g = 0; g < 32; ++g) b.qs[g] = static_cast<uint16_t>(sb.idx[g] | (sign7(sb.signs[g]) << 9));
  for (int ib = 0; ib < 8; ++ib) b.scales[ib] = static_cast<uint8_t>(sb.ls[2 * ib] | (sb.ls[2 * ib + 1] << 4));
}

void pack_iq2_s(const SuperBlock& sb, BlockIQ2_S& b) {
  std::memset(&b, 0, sizeof(b));
  b.d = f32_to_f16(sb.d);
  for (int g = 0; g < 32; ++g) {
    const int ib = g / 4, l = g % 4;
    b.qs[g] = static_cast<uint8_t>(sb.idx[g] & 255);
    b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | ((sb.idx[g] >> 8) << (2 * l)));
    b.qs[kQK_K / 8 + g] = sb.signs[g];
  }
  for (int ib = 0; ib < 8; ++ib) b.scales[ib] = static_cast<uint8_t>(sb.ls[2 * ib] | (sb.ls[2 * ib + 1] << 4));
}

template <class Block, void (*Pack)(const SuperBlock&, Block&)>
void encode_rows(const Scheme& sc, const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < nb; ++i) {
    Pack(encode_super_block(sc, src + i * kQK_K, w != nullptr ? w + i * kQK_K : nullptr), b[i]);
  }
}

// IQ1_S and IQ1_M: x = d (2 ls + 1) (g + shift), g an entry of -1, 0, 1 and shift +-1/8, one shift
// per sub-block of 32 in IQ1_S and per group of 8 in IQ1_M, ls 3 bits per 32 (IQ1_S) or 16
// (IQ1_M) elements. No signs are split off: x itself is matched, each group at both shifts.
// The same search as above otherwise: candidate scales, snapped groups, least-squares refits,
// then the super-block scale with the entries fixed and a last snap at the final scales.
constexpr float kShift = 0.125f;

// Two distance shells, not three: as good on Gaussian rows (error 0.887x ggml's against 0.886x)
// and several times faster, the ternary lattice's third shell being a long list.
const Codebook& iq1_book() {
  static const Codebook cb = build_codebook(kIq1sGrid, 2048, 2);
  return cb;
}

struct Iq1Block {
  float d = 0.0f;
  uint8_t ls[16] = {};     // [256 / sub] 3-bit scales
  uint16_t idx[32] = {};   // per group of 8
  bool negative[32] = {};  // per group of 8: shift -1/8
};

float shift_of(bool negative) { return negative ? -kShift : kShift; }

// Entries and shifts of a run of n values (one scale s) with the lowest error at s; with
// shift_per_group false the run takes one shift.
void snap_iq1_run(const Codebook& cb, const float* x, const float* w, int n, float s, bool shift_per_group,
                  uint16_t* idx, bool* negative) {
  uint16_t cand[2][4] = {};  // [shift][group]
  double total[2] = {0, 0};
  for (int g = 0; g < n / 8; ++g) {
    double e[2];
    for (int k = 0; k < 2; ++k) {
      cand[k][g] = static_cast<uint16_t>(snap_group(cb, x + 8 * g, w + 8 * g, s, shift_of(k == 1)));
      e[k] = group_error(cb, cand[k][g], x + 8 * g, w + 8 * g, s, shift_of(k == 1));
      total[k] += e[k];
    }
    negative[g] = e[1] < e[0];
  }
  for (int g = 0; g < n / 8; ++g) {
    if (!shift_per_group) negative[g] = total[1] < total[0];
    idx[g] = cand[negative[g] ? 1 : 0][g];
  }
}

Fit iq1_fit_of(const Codebook& cb, const float* x, const float* w, int n, const uint16_t* idx, const bool* negative) {
  Fit f;
  for (int g = 0; g < n / 8; ++g) {
    const int8_t* m = &cb.mag[static_cast<size_t>(idx[g] * 8)];
    for (int i = 0; i < 8; ++i) {
      const double q = m[i] + shift_of(negative[g]);
      f.qx += static_cast<double>(w[8 * g + i]) * x[8 * g + i] * q;
      f.q2 += static_cast<double>(w[8 * g + i]) * q * q;
    }
  }
  return f;
}

double iq1_error(const Codebook& cb, const float* x, const float* w, int n, float s, const uint16_t* idx,
                 const bool* negative) {
  double e = 0;
  for (int g = 0; g < n / 8; ++g) e += group_error(cb, idx[g], x + 8 * g, w + 8 * g, s, shift_of(negative[g]));
  return e;
}

// Entries, shifts and continuous scale (>= 0) of one scale sub-block of n values.
float fit_iq1_run(const Codebook& cb, const float* x, const float* w, int n, bool shift_per_group, uint16_t* idx,
                  bool* negative) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  snap_iq1_run(cb, x, w, n, 0.0f, shift_per_group, idx, negative);
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;
  uint16_t trial[4];
  bool trial_neg[4];
  double best_q = -1;
  float scale = 0.0f;
  auto consider = [&]() {
    const Fit f = iq1_fit_of(cb, x, w, n, trial, trial_neg);
    if (f.q2 > 0 && f.qx > 0 && f.qx * f.qx / f.q2 > best_q) {
      best_q = f.qx * f.qx / f.q2;
      scale = static_cast<float>(f.qx / f.q2);
      std::copy(trial, trial + n / 8, idx);
      std::copy(trial_neg, trial_neg + n / 8, negative);
      return true;
    }
    return false;
  };
  // Ternary levels: the best scale lies well below amax (about half of it for Gaussian values).
  for (int t = 0; t <= 32; ++t) {
    snap_iq1_run(cb, x, w, n, amax * (0.2f + 0.025f * static_cast<float>(t)), shift_per_group, trial, trial_neg);
    consider();
  }
  for (int iter = 0; iter < 2 && scale > 0.0f; ++iter) {
    snap_iq1_run(cb, x, w, n, scale, shift_per_group, trial, trial_neg);
    if (!consider()) break;
  }
  return scale;
}

Iq1Block encode_iq1(const float* x, const float* w_in, int sub, bool shift_per_group) {
  const Codebook& cb = iq1_book();
  Iq1Block b;
  float w[kQK_K];
  block_weights(x, w_in, w);
  const int n_sub = kQK_K / sub, per_sub = sub / 8;
  float scale[16];
  double qx[16], q2[16];
  float max_scale = 0.0f;
  for (int ib = 0; ib < n_sub; ++ib) {
    const int o = ib * sub;
    scale[ib] = fit_iq1_run(cb, x + o, w + o, sub, shift_per_group, b.idx + ib * per_sub, b.negative + ib * per_sub);
    const Fit f = iq1_fit_of(cb, x + o, w + o, sub, b.idx + ib * per_sub, b.negative + ib * per_sub);
    qx[ib] = f.qx;
    q2[ib] = f.q2;
    max_scale = std::max(max_scale, scale[ib]);
  }
  if (!(max_scale > 0.0f) || !std::isfinite(max_scale)) return b;
  double best_err = std::numeric_limits<double>::infinity();
  for (int t = -12; t <= 12; ++t) {  // D around max_scale / 15 (the top of 3-bit odd levels)
    const float d = f16_to_f32(f32_to_f16(max_scale / 15.0f * (1.0f + 0.01f * static_cast<float>(t))));
    if (!(d > 0.0f)) continue;
    double err = 0;
    uint8_t ls[16];
    for (int ib = 0; ib < n_sub; ++ib) {
      double best = std::numeric_limits<double>::infinity();
      const int guess = round_clamp((scale[ib] / d - 1.0f) / 2.0f, 0, 7);
      for (int l = std::max(0, guess - 1); l <= std::min(7, guess + 1); ++l) {
        const double S = static_cast<double>(d) * (2 * l + 1);
        const double e = S * S * q2[ib] - 2 * S * qx[ib];
        if (e < best) {
          best = e;
          ls[ib] = static_cast<uint8_t>(l);
        }
      }
      err += best;
    }
    if (err < best_err) {
      best_err = err;
      b.d = d;
      std::copy(ls, ls + n_sub, b.ls);
    }
  }
  for (int ib = 0; ib < n_sub; ++ib) {  // the entries again at the final scales
    const int o = ib * sub;
    const float S = b.d * static_cast<float>(2 * b.ls[ib] + 1);
    uint16_t idx[4];
    bool neg[4];
    snap_iq1_run(cb, x + o, w + o, sub, S, shift_per_group, idx, neg);
    if (iq1_error(cb, x + o, w + o, sub, S, idx, neg) <
        iq1_error(cb, x + o, w + o, sub, S, b.idx + ib * per_sub, b.negative + ib * per_sub)) {
      std::copy(idx, idx + per_sub, b.idx + ib * per_sub);
      std::copy(neg, neg + per_sub, b.negative + ib * per_sub);
    }
  }
  return b;
}

void pack_iq1_s(const Iq1Block& e, BlockIQ1_S& b) {
  std::memset(&b, 0, sizeof(b));
  b.d = f32_to_f16(e.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint16_t qh = static_cast<uint16_t>((e.ls[ib] << 12) | (e.negative[4 * ib] ? 0x8000 : 0));
    for (int l = 0; l < 4; ++l) {
      b.qs[4 * ib + l] = static_cast<uint8_t>(e.idx[4 * ib + l] & 255);
      qh = static_cast<uint16_t>(qh | ((e.idx[4 * ib + l] >> 8) << (3 * l)));
    }
    b.qh[ib] = qh;
  }
}

void pack_iq1_m(const Iq1Block& e, BlockIQ1_M& b) {
  std::memset(&b, 0, sizeof(b));
  uint16_t sc[4] = {};
  for (int ib = 0; ib < 8; ++ib) {
    const int shift = 6 * (ib % 2);
    sc[ib / 2] = static_cast<uint16_t>(sc[ib / 2] | (e.ls[2 * ib] << shift) | (e.ls[2 * ib + 1] << (shift + 3)));
    for (int l = 0; l < 4; ++l) {
      const int g = 4 * ib + l;
      b.qs[g] = static_cast<uint8_t>(e.idx[g] & 255);
      const int nibble = (e.idx[g] >> 8) | (e.negative[g] ? 8 : 0);
      b.qh[2 * ib + l / 2] = static_cast<uint8_t>(b.qh[2 * ib + l / 2] | (nibble << (4 * (l % 2))));
    }
  }
  // The f16 super-scale goes in the top nibbles of the four scale words, lowest nibble first.
  const uint16_t d = f32_to_f16(e.d);
  for (int k = 0; k < 4; ++k) sc[k] = static_cast<uint16_t>(sc[k] | (((d >> (4 * k)) & 0xF) << 12));
  std::memcpy(b.scales, sc, sizeof(sc));
}

template <class Block, void (*Pack)(const Iq1Block&, Block&)>
void encode_iq1_rows(int sub, bool shift_per_group, const float* src, void* dst, int64_t nb, const float* w) {
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < nb; ++i) {
    Pack(encode_iq1(src + i * kQK_K, w != nullptr ? w + i * kQK_K : nullptr, sub, shift_per_group), b[i]);
  }
}

}  // namespace

void quantize_iq3_xxs(const float* src, void* dst, int64_t nb, const float* w) {
  encode_rows<BlockIQ3_XXS, pack_iq3_xxs>(kIq3xxs, src, dst, nb, w);
}
void quantize_iq3_s(const float* src, void* dst, int64_t nb, const float* w) {
  encode_rows<BlockIQ3_S, pack_iq3_s>(kIq3s, src, dst, nb, w);
}
void quantize_iq2_xxs(const float* src, void* dst, int64_t nb, const float* w) {
  encode_rows<BlockIQ2_XXS, pack_iq2_xxs>(kIq2xxs, src, dst, nb, w);
}
void quantize_iq2_xs(const float* src, void* dst, int64_t nb, const float* w) {
  encode_rows<BlockIQ2_XS, pack_iq2_xs>(kIq2xs, src, dst, nb, w);
}
void quantize_iq2_s(const float* src, void* dst, int64_t nb, const float* w) {
  encode_rows<BlockIQ2_S, pack_iq2_s>(kIq2s, src, dst, nb, w);
}

void quantize_iq1_s(const float* src, void* dst, int64_t nb, const float* w) {
  encode_iq1_rows<BlockIQ1_S, pack_iq1_s>(32, false, src, dst, nb, w);
}
void quantize_iq1_m(const float* src, void* dst, int64_t nb, const float* w) {
  encode_iq1_rows<BlockIQ1_M, pack_iq1_m>(16, true, src, dst, nb, w);
}

}  // namespace fulgur::detail
