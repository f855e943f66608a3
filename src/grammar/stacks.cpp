#include "grammar/stacks.h"

#include <algorithm>

namespace fulgur::grammar_stacks {

ByteStep utf8_step(Utf8State& s, uint8_t b, uint32_t& cp) {
  if (s.need == 0) {
    if (b < 0x80) {
      cp = b;
      return ByteStep::kChar;
    }
    // Lead bytes; C0, C1 and F5.. only ever start overlong or out-of-range sequences.
    if (b >= 0xC2 && b <= 0xDF) s = {b & 0x1Fu, 1, 2};
    else if (b >= 0xE0 && b <= 0xEF) s = {b & 0x0Fu, 2, 3};
    else if (b >= 0xF0 && b <= 0xF4) s = {b & 0x07u, 3, 4};
    else return ByteStep::kInvalid;
    return ByteStep::kPartial;
  }
  if ((b & 0xC0) != 0x80) return ByteStep::kInvalid;
  s.value = (s.value << 6) | (b & 0x3Fu);
  if (--s.need > 0) return ByteStep::kPartial;
  cp = s.value;
  const uint32_t min = s.len == 2 ? 0x80 : s.len == 3 ? 0x800 : 0x10000;
  s = {};
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return ByteStep::kInvalid;
  return ByteStep::kChar;
}

void utf8_range(const Utf8State& s, uint32_t& lo, uint32_t& hi) {
  const uint32_t shift = 6u * s.need;
  lo = s.value << shift;
  hi = lo | ((1u << shift) - 1u);
  const uint32_t min = s.len == 2 ? 0x80 : s.len == 3 ? 0x800 : 0x10000;
  lo = std::max(lo, min);
  hi = std::min<uint32_t>(hi, 0x10FFFF);
}

void expand(const Grammar& g, std::vector<Node>& nodes, uint32_t pos, int32_t parent,
            std::vector<int32_t>& tops) {
  // Recursion depth is bounded: the parser refuses left recursion, so every cycle of rule
  // references reads a character first.
  const Element& e = g.elements[pos];
  switch (e.kind) {
    case ElementKind::kEnd:
      if (parent < 0) {
        tops.push_back(kAccepted);
      } else {
        expand(g, nodes, nodes[static_cast<size_t>(parent)].pos,
               nodes[static_cast<size_t>(parent)].parent, tops);
      }
      return;
    case ElementKind::kChars:
      nodes.push_back({pos, parent});
      tops.push_back(static_cast<int32_t>(nodes.size() - 1));
      return;
    case ElementKind::kRule: {
      // A reference in tail position continues straight at the parent: right recursion (the
      // parser's `X*`) then runs in constant stack depth.
      int32_t cont = parent;
      if (g.elements[pos + 1].kind != ElementKind::kEnd) {
        nodes.push_back({pos + 1, parent});
        cont = static_cast<int32_t>(nodes.size() - 1);
      }
      for (uint32_t alt : g.alternatives[e.value]) expand(g, nodes, alt, cont, tops);
      return;
    }
  }
}

namespace {

bool same_stack(const std::vector<Node>& nodes, int32_t a, int32_t b) {
  while (a != b) {
    if (a < 0 || b < 0) return false;
    const Node& na = nodes[static_cast<size_t>(a)];
    const Node& nb = nodes[static_cast<size_t>(b)];
    if (na.pos != nb.pos) return false;
    a = na.parent;
    b = nb.parent;
  }
  return true;
}

uint64_t stack_hash(const std::vector<Node>& nodes, int32_t a) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  while (a >= 0) {
    const Node& n = nodes[static_cast<size_t>(a)];
    h = (h ^ n.pos) * 0x100000001B3ull;
    a = n.parent;
  }
  return h;
}

// Duplicate stacks come from ambiguous grammars (two alternatives reaching the same place);
// left in, their number could grow with every character.
void dedupe(const std::vector<Node>& nodes, std::vector<int32_t>& tops) {
  if (tops.size() < 2) return;
  if (tops.size() <= 32) {  // the usual case (JSON grammars keep a handful): pairwise
    size_t kept = 0;
    for (size_t i = 0; i < tops.size(); ++i) {
      bool dup = false;
      for (size_t j = 0; j < kept && !dup; ++j) dup = same_stack(nodes, tops[i], tops[j]);
      if (!dup) tops[kept++] = tops[i];
    }
    tops.resize(kept);
    return;
  }
  std::vector<std::pair<uint64_t, int32_t>> hashed;
  for (int32_t t : tops) hashed.push_back({stack_hash(nodes, t), t});
  std::stable_sort(hashed.begin(), hashed.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  tops.clear();
  for (size_t k = 0; k < hashed.size(); ++k) {
    bool dup = false;
    for (size_t m = k; m-- > 0 && hashed[m].first == hashed[k].first && !dup;) {
      dup = same_stack(nodes, hashed[m].second, hashed[k].second);
    }
    if (!dup) tops.push_back(hashed[k].second);
  }
}

}  // namespace

void advance(const Grammar& g, std::vector<Node>& nodes, std::span<const int32_t> tops, uint32_t cp,
             std::vector<int32_t>& out) {
  out.clear();
  for (int32_t t : tops) {
    if (t == kAccepted) continue;
    const Node n = nodes[static_cast<size_t>(t)];
    if (!g.char_sets[g.elements[n.pos].value].contains(cp)) continue;
    expand(g, nodes, n.pos + 1, n.parent, out);
  }
  dedupe(nodes, out);
}

bool any_can_read(const Grammar& g, const std::vector<Node>& nodes, std::span<const int32_t> tops,
                  uint32_t lo, uint32_t hi) {
  for (int32_t t : tops) {
    if (t == kAccepted) continue;
    const Node& n = nodes[static_cast<size_t>(t)];
    if (g.char_sets[g.elements[n.pos].value].intersects(lo, hi)) return true;
  }
  return false;
}

void initial(const Grammar& g, std::vector<Node>& nodes, std::vector<int32_t>& tops) {
  nodes.clear();
  tops.clear();
  for (uint32_t alt : g.alternatives[g.root]) expand(g, nodes, alt, -1, tops);
  dedupe(nodes, tops);
}

}  // namespace fulgur::grammar_stacks
