// Which tokens a grammar allows next, over a whole vocabulary.
//
// TokenVocab holds every token's bytes in a trie (built once per model); TokenMasker walks the
// trie once per step from a matcher's state, advancing the parse stacks one byte per trie edge
// and pruning a subtree as soon as no stack survives, so tokens sharing a prefix share the work.
// Tokens without text (control tokens) are never allowed; end-of-generation tokens are allowed
// exactly when the grammar is complete.
//
// A mask depends only on the matcher's state (its stacks and a partly read character), and
// states repeat: inside a JSON string every token leaves the same stacks (repetition is tail
// recursion). TokenMasker keeps the masks of its last few states, so the worst case, a free
// string where almost the whole trie is walked, is paid once per string, not once per token.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/matcher.h"

namespace fulgur {

class TokenVocab {
 public:
  // pieces: [n_vocab] the bytes each token adds to the text ("" = not a text token);
  // eog: the end-of-generation ids.
  TokenVocab(std::vector<std::string> pieces, const std::vector<int32_t>& eog);

  int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  bool is_eog(int32_t id) const { return eog_flag_[static_cast<size_t>(id)] != 0; }
  std::span<const int32_t> eog() const { return eog_; }
  size_t trie_nodes() const { return nodes_.size(); }

  // Advances m by token id; false (m unchanged) when the grammar rejects it. An end-of-generation
  // token is accepted only when m is complete, and leaves m as it is.
  bool accept(GrammarMatcher& m, int32_t id) const;
  bool allows(const GrammarMatcher& m, int32_t id) const;

 private:
  friend class TokenMasker;
  struct TrieNode {
    uint32_t first_child = 0;  // children are nodes_[first_child, first_child + n_children)
    uint32_t n_children = 0;
    uint32_t first_token = 0;  // tokens ending here: token_ids_[first_token, + n_tokens)
    uint32_t n_tokens = 0;
    uint8_t byte = 0;          // the edge from the parent
  };
  void build(uint32_t node, std::span<const int32_t> sorted, size_t depth);

  std::vector<std::string> pieces_;
  std::vector<uint8_t> eog_flag_;  // [n_vocab]
  std::vector<int32_t> eog_;
  std::vector<TrieNode> nodes_;    // [0] the root (the empty prefix)
  std::vector<int32_t> token_ids_;
};

class TokenMasker {
 public:
  // Keeps the masks of the last `cached_states` states (0: none).
  explicit TokenMasker(size_t cached_states = 8) : cache_(cached_states) {}

  // allowed: resized to ceil(n_vocab / 64) words, bit i of word w = token 64 w + i allowed.
  // Returns how many tokens are allowed. Allocates only while its scratch grows. Kept masks are
  // known by the vocabulary's address: a vocabulary must outlive the maskers that served it.
  int64_t fill(const GrammarMatcher& m, const TokenVocab& vocab, std::vector<uint64_t>& allowed);
  // fill() calls answered from the kept masks.
  int64_t cache_hits() const { return hits_; }

 private:
  struct Cached {
    std::shared_ptr<const Grammar> grammar;  // held, so that its address names it
    const TokenVocab* vocab = nullptr;
    std::vector<uint32_t> key;               // state_key()
    std::vector<uint64_t> mask;
    int64_t count = 0;
    uint64_t used = 0;
  };
  Cached* find_cached(const GrammarMatcher& m, const TokenVocab& vocab);
  int64_t walk_all(const GrammarMatcher& m, const TokenVocab& vocab, std::vector<uint64_t>& allowed);

  void walk(const TokenVocab& v, uint32_t node, std::span<const int32_t> tops,
            grammar_stacks::Utf8State partial, size_t depth);

  const Grammar* grammar_ = nullptr;
  uint64_t* bits_ = nullptr;
  int64_t count_ = 0;
  std::vector<grammar_stacks::Node> nodes_;  // the matcher's arena, then the walk's
  std::vector<std::vector<int32_t>> levels_; // [trie depth] the stacks after that many bytes
  std::vector<Cached> cache_;
  std::vector<uint32_t> key_;
  uint64_t tick_ = 0;
  int64_t hits_ = 0;
};

inline bool mask_allows(std::span<const uint64_t> allowed, int32_t id) {
  return (allowed[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u;
}

}  // namespace fulgur
