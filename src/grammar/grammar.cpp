#include "grammar/grammar.h"

namespace fulgur {

bool CharSet::contains(uint32_t c) const {
  bool in = false;
  for (const CharRange& r : ranges) {
    if (c >= r.lo && c <= r.hi) {
      in = true;
      break;
    }
  }
  return in != negated;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const CharRange& r : ranges) {
      if (r.lo <= hi && lo <= r.hi) return true;
    }
    return false;
  }
  // Negated: some point of [lo, hi] escapes every range. Walk [lo, hi] left to right, jumping
  // past each range that covers the current point; the ranges are few.
  uint32_t c = lo;
  for (bool moved = true; moved;) {
    moved = false;
    for (const CharRange& r : ranges) {
      if (c >= r.lo && c <= r.hi) {
        if (r.hi >= hi) return false;
        c = r.hi + 1;
        moved = true;
      }
    }
  }
  return true;
}

}  // namespace fulgur
