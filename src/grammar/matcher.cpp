#include "grammar/matcher.h"

#include <utility>

#include "core/error.h"

namespace fulgur {

using namespace grammar_stacks;

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  FULGUR_CHECK(grammar_ != nullptr, "grammar matcher: no grammar");
  initial(*grammar_, nodes_, tops_);
}

bool GrammarMatcher::accept_byte(uint8_t byte) {
  Utf8State s = partial_;
  uint32_t cp = 0;
  switch (utf8_step(s, byte, cp)) {
    case ByteStep::kInvalid:
      return false;
    case ByteStep::kPartial: {
      uint32_t lo = 0, hi = 0;
      utf8_range(s, lo, hi);
      if (lo > hi || !any_can_read(*grammar_, nodes_, tops_, lo, hi)) return false;
      partial_ = s;
      return true;
    }
    case ByteStep::kChar: {
      const size_t mark = nodes_.size();
      advance(*grammar_, nodes_, tops_, cp, scratch_);
      if (scratch_.empty()) {
        nodes_.resize(mark);
        return false;
      }
      tops_.swap(scratch_);
      partial_ = s;
      return true;
    }
  }
  return false;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  const size_t mark = nodes_.size();
  const std::vector<int32_t> tops = tops_;
  const Utf8State partial = partial_;
  for (char c : bytes) {
    if (!accept_byte(static_cast<uint8_t>(c))) {
      nodes_.resize(mark);
      tops_ = tops;
      partial_ = partial;
      return false;
    }
  }
  // Rejected branches leave dead nodes behind; a few hundred cost nothing to copy.
  if (nodes_.size() > 512) compact();
  return true;
}

bool GrammarMatcher::can_accept(std::string_view bytes) const {
  GrammarMatcher copy = *this;
  return copy.accept_bytes(bytes);
}

bool GrammarMatcher::complete() const {
  if (partial_.need != 0) return false;
  for (int32_t t : tops_) {
    if (t == kAccepted) return true;
  }
  return false;
}

bool GrammarMatcher::can_continue() const {
  for (int32_t t : tops_) {
    if (t != kAccepted) return true;
  }
  return false;
}

void GrammarMatcher::compact() {
  std::vector<int32_t> remap(nodes_.size(), -2);  // -2: not copied yet
  std::vector<Node> kept;
  // Copies a chain bottom-up, so that parents precede children in the new arena.
  std::vector<int32_t> chain;
  for (int32_t& t : tops_) {
    if (t < 0) continue;
    chain.clear();
    for (int32_t n = t; n >= 0 && remap[static_cast<size_t>(n)] == -2; n = nodes_[static_cast<size_t>(n)].parent) {
      chain.push_back(n);
    }
    for (size_t i = chain.size(); i-- > 0;) {
      const Node& old = nodes_[static_cast<size_t>(chain[i])];
      const int32_t parent = old.parent < 0 ? old.parent : remap[static_cast<size_t>(old.parent)];
      kept.push_back({old.pos, parent});
      remap[static_cast<size_t>(chain[i])] = static_cast<int32_t>(kept.size() - 1);
    }
    t = remap[static_cast<size_t>(t)];
  }
  nodes_ = std::move(kept);
}

}  // namespace fulgur
