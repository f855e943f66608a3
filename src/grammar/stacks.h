// The pushdown state a grammar matcher keeps (grammar/matcher.h) and the steps on it, shared by
// the matcher and the token masker (grammar/token_mask.h).
//
// A parse position is a stack of continuations. Stacks share their tails: every stack is a node
// index into an arena, each node holding an element position and its parent node (-1: the
// bottom), so copying a set of stacks copies only their top indices. A top node's position is
// always a kChars element (the next code point to read); kAccepted stands for the empty stack,
// i.e. the root rule is complete. A set of tops with no entry means the input was rejected.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"

namespace fulgur::grammar_stacks {

struct Node {
  uint32_t pos;    // index into Grammar::elements
  int32_t parent;  // index into the arena, -1: none
};

constexpr int32_t kAccepted = -1;

// A UTF-8 character read so far: `need` more continuation bytes of a `len`-byte sequence.
struct Utf8State {
  uint32_t value = 0;
  uint8_t need = 0;
  uint8_t len = 0;
};

enum class ByteStep { kChar, kPartial, kInvalid };
// Feeds one byte; kChar puts the finished code point in cp and resets the state.
ByteStep utf8_step(Utf8State& s, uint8_t byte, uint32_t& cp);
// The code points a partly read character can still become, [lo, hi].
void utf8_range(const Utf8State& s, uint32_t& lo, uint32_t& hi);

// Pushes onto `tops` every stack reached from position `pos` with continuation `parent`,
// following rule references and ends of alternatives until a kChars element.
void expand(const Grammar& g, std::vector<Node>& nodes, uint32_t pos, int32_t parent,
            std::vector<int32_t>& tops);
// The stacks after reading code point cp from each of `tops` (those that cannot are dropped),
// without duplicates, into `out` (cleared first).
void advance(const Grammar& g, std::vector<Node>& nodes, std::span<const int32_t> tops, uint32_t cp,
             std::vector<int32_t>& out);
// Whether some stack of `tops` can read a code point in [lo, hi].
bool any_can_read(const Grammar& g, const std::vector<Node>& nodes, std::span<const int32_t> tops,
                  uint32_t lo, uint32_t hi);
// The initial stacks of the root rule.
void initial(const Grammar& g, std::vector<Node>& nodes, std::vector<int32_t>& tops);

}  // namespace fulgur::grammar_stacks
