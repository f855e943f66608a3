#include "grammar/token_mask.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace fulgur {

using namespace grammar_stacks;

TokenVocab::TokenVocab(std::vector<std::string> pieces, const std::vector<int32_t>& eog)
    : pieces_(std::move(pieces)), eog_flag_(pieces_.size(), 0) {
  for (int32_t id : eog) {
    FULGUR_CHECK(id >= 0 && id < n_vocab(), "token vocab: end-of-generation id ", id,
                 " is outside [0, ", n_vocab(), ")");
    if (!eog_flag_[static_cast<size_t>(id)]) eog_.push_back(id);
    eog_flag_[static_cast<size_t>(id)] = 1;
  }
  // The text tokens sorted by their bytes: every trie node is then a contiguous range, the
  // tokens ending at it first.
  std::vector<int32_t> sorted;
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (!pieces_[static_cast<size_t>(id)].empty() && !eog_flag_[static_cast<size_t>(id)]) sorted.push_back(id);
  }
  std::sort(sorted.begin(), sorted.end(), [this](int32_t a, int32_t b) {
    const int c = pieces_[static_cast<size_t>(a)].compare(pieces_[static_cast<size_t>(b)]);
    return c < 0 || (c == 0 && a < b);
  });
  nodes_.emplace_back();
  build(0, sorted, 0);
}

void TokenVocab::build(uint32_t node, std::span<const int32_t> sorted, size_t depth) {
  size_t i = 0;
  nodes_[node].first_token = static_cast<uint32_t>(token_ids_.size());
  while (i < sorted.size() && pieces_[static_cast<size_t>(sorted[i])].size() == depth) {
    token_ids_.push_back(sorted[i++]);
  }
  nodes_[node].n_tokens = static_cast<uint32_t>(token_ids_.size()) - nodes_[node].first_token;
  // Group the rest by their byte at `depth`; the children are laid out side by side.
  std::vector<std::pair<size_t, size_t>> groups;
  while (i < sorted.size()) {
    const char b = pieces_[static_cast<size_t>(sorted[i])][depth];
    size_t j = i;
    while (j < sorted.size() && pieces_[static_cast<size_t>(sorted[j])][depth] == b) ++j;
    groups.push_back({i, j});
    i = j;
  }
  const auto first = static_cast<uint32_t>(nodes_.size());
  nodes_[node].first_child = first;
  nodes_[node].n_children = static_cast<uint32_t>(groups.size());
  nodes_.resize(nodes_.size() + groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto child = first + static_cast<uint32_t>(g);
    nodes_[child].byte = static_cast<uint8_t>(pieces_[static_cast<size_t>(sorted[groups[g].first])][depth]);
    build(child, sorted.subspan(groups[g].first, groups[g].second - groups[g].first), depth + 1);
  }
}

bool TokenVocab::accept(GrammarMatcher& m, int32_t id) const {
  if (id < 0 || id >= n_vocab()) return false;
  if (is_eog(id)) return m.complete();
  const std::string& p = piece(id);
  return !p.empty() && m.accept_bytes(p);
}

bool TokenVocab::allows(const GrammarMatcher& m, int32_t id) const {
  if (id < 0 || id >= n_vocab()) return false;
  if (is_eog(id)) return m.complete();
  const std::string& p = piece(id);
  return !p.empty() && m.can_accept(p);
}

namespace {

// The matcher's state as numbers: the partly read character, then each stack's element
// positions from its top down, each stack closed by a separator.
void state_key(const GrammarMatcher& m, std::vector<uint32_t>& key) {
  constexpr uint32_t kSeparator = 0xFFFFFFFFu, kEmptyStack = 0xFFFFFFFEu;
  const Utf8State& p = m.partial();
  key.assign({p.value, p.need, p.len});
  for (int32_t top : m.tops()) {
    if (top == grammar_stacks::kAccepted) key.push_back(kEmptyStack);
    for (int32_t n = top; n >= 0; n = m.nodes()[static_cast<size_t>(n)].parent) key.push_back(m.nodes()[static_cast<size_t>(n)].pos);
    key.push_back(kSeparator);
  }
}

}  // namespace

TokenMasker::Cached* TokenMasker::find_cached(const GrammarMatcher& m, const TokenVocab& v) {
  for (Cached& c : cache_) {
    if (c.vocab == &v && c.grammar == m.shared_grammar() && c.key == key_) return &c;
  }
  return nullptr;
}

int64_t TokenMasker::fill(const GrammarMatcher& m, const TokenVocab& v, std::vector<uint64_t>& allowed) {
  if (cache_.empty()) return walk_all(m, v, allowed);
  state_key(m, key_);
  if (Cached* c = find_cached(m, v)) {
    c->used = ++tick_;
    ++hits_;
    allowed.assign(c->mask.begin(), c->mask.end());
    return c->count;
  }
  const int64_t count = walk_all(m, v, allowed);
  Cached& slot = *std::min_element(cache_.begin(), cache_.end(), [](const Cached& a, const Cached& b) { return a.used < b.used; });
  slot.grammar = m.shared_grammar();
  slot.vocab = &v;
  slot.key = key_;
  slot.mask.assign(allowed.begin(), allowed.end());
  slot.count = count;
  slot.used = ++tick_;
  return count;
}

int64_t TokenMasker::walk_all(const GrammarMatcher& m, const TokenVocab& v, std::vector<uint64_t>& allowed) {
  allowed.assign((static_cast<size_t>(v.n_vocab()) + 63) / 64, 0);
  grammar_ = &m.grammar();
  bits_ = allowed.data();
  count_ = 0;
  nodes_ = m.nodes();
  if (levels_.empty()) levels_.resize(1);
  levels_[0] = m.tops();
  walk(v, 0, levels_[0], m.partial(), 0);
  if (m.complete()) {
    for (int32_t id : v.eog()) {
      bits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      ++count_;
    }
  }
  return count_;
}

void TokenMasker::walk(const TokenVocab& v, uint32_t node, std::span<const int32_t> tops,
                       Utf8State partial, size_t depth) {
  const TokenVocab::TrieNode& n = v.nodes_[node];
  if (levels_.size() < depth + 2) levels_.resize(depth + 2);
  for (uint32_t c = 0; c < n.n_children; ++c) {
    const uint32_t child = n.first_child + c;
    const TokenVocab::TrieNode& cn = v.nodes_[child];
    Utf8State s = partial;
    uint32_t cp = 0;
    const size_t mark = nodes_.size();
    std::span<const int32_t> next;
    switch (utf8_step(s, cn.byte, cp)) {
      case ByteStep::kInvalid:
        continue;
      case ByteStep::kPartial: {
        uint32_t lo = 0, hi = 0;
        utf8_range(s, lo, hi);
        if (lo > hi || !any_can_read(*grammar_, nodes_, tops, lo, hi)) continue;
        next = tops;
        break;
      }
      case ByteStep::kChar: {
        std::vector<int32_t>& out = levels_[depth + 1];
        advance(*grammar_, nodes_, tops, cp, out);
        if (out.empty()) {
          nodes_.resize(mark);
          continue;
        }
        next = out;
        break;
      }
    }
    for (uint32_t t = 0; t < cn.n_tokens; ++t) {
      const int32_t id = v.token_ids_[cn.first_token + t];
      bits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      ++count_;
    }
    if (cn.n_children > 0) walk(v, child, next, s, depth + 1);
    nodes_.resize(mark);
  }
}

}  // namespace fulgur
