// The merge loop that byte-level BPE, SentencePiece and Gemma 4's BPE share (llama.cpp's
// llm_tokenizer_bpe_session and llm_tokenizer_spm_session run the same loop with a different
// order on pairs): a word starts as a list of symbols (bytes or UTF-8 characters); every adjacent
// pair that may merge goes into a priority queue; the best pair merges, its neighbours form new
// pairs, until no pair is left. Only how a pair is judged differs:
//   byte-level BPE, Gemma 4: a pair merges when it is a merge rule; lowest rank first;
//   SentencePiece: a pair merges when its text is a token; highest token score first.
// Equal priorities go to the leftmost pair, as in both of llama.cpp's queues.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace fulgur {

struct MergeSymbol {
  int32_t start;   // byte offset of the symbol's text in the word
  int32_t length;  // bytes; 0 once merged into its left neighbour
  int32_t id;      // token of the symbol's text, -1 when no token has it
  int32_t prev, next;  // neighbours in the live list, -1 at the ends
};

// What a pair becomes: `priority` higher merges first (BPE passes -rank, SentencePiece the score).
struct PairMerge {
  double priority;
  int32_t result;  // token id of the merged text, -1 when it is not a token (see run_merges)
};

class SymbolMerger {
 public:
  // [word symbols] the caller fills these (start, length, id; prev/next set by link_symbols).
  std::vector<MergeSymbol> symbols;

  // Chains symbols[0 .. n) in order.
  void link_symbols();

  // Merges best pair first. `judge(left, right)` returns the merge of two adjacent live symbols,
  // or nullopt when they may not merge.
  template <class Judge>
  void run_merges(Judge&& judge);

  // Calls emit(symbol) for each symbol left, in text order.
  template <class Emit>
  void for_each_symbol(Emit&& emit) const {
    if (symbols.empty()) return;
    for (int32_t i = 0; i >= 0; i = symbols[i].next) emit(symbols[i]);
  }

 private:
  struct Candidate {
    double priority;
    int32_t left, right;                // symbol indices
    int32_t left_length, right_length;  // the pair's texts when pushed (a symbol only grows)
    int32_t result;
  };
  static bool after(const Candidate& a, const Candidate& b) {
    // std's heap is a max-heap under "less"; this puts the best priority, then the leftmost
    // pair, on top.
    return a.priority != b.priority ? a.priority < b.priority : a.left > b.left;
  }
  template <class Judge>
  void push_pair(int32_t left, Judge& judge);

  std::vector<Candidate> heap_;  // [pairs] reused across words
};

inline void SymbolMerger::link_symbols() {
  const auto n = static_cast<int32_t>(symbols.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols[i].prev = i - 1;
    symbols[i].next = i + 1 < n ? i + 1 : -1;
  }
}

template <class Judge>
void SymbolMerger::push_pair(int32_t left, Judge& judge) {
  if (left < 0) return;
  const int32_t right = symbols[left].next;
  if (right < 0) return;
  const std::optional<PairMerge> m = judge(symbols[left], symbols[right]);
  if (!m) return;
  heap_.push_back({m->priority, left, right, symbols[left].length, symbols[right].length, m->result});
  std::push_heap(heap_.begin(), heap_.end(), after);
}

template <class Judge>
void SymbolMerger::run_merges(Judge&& judge) {
  heap_.clear();
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_pair(i, judge);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), after);
    const Candidate c = heap_.back();
    heap_.pop_back();
    MergeSymbol& left = symbols[c.left];
    MergeSymbol& right = symbols[c.right];
    // Stale when either side merged since the push: a merged-away symbol has length 0, a symbol
    // that absorbed its right neighbour is longer (symbols start at fixed offsets, so equal
    // lengths mean equal texts).
    if (left.length != c.left_length || right.length != c.right_length || left.next != c.right) {
      continue;
    }
    left.length += right.length;
    left.id = c.result;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    right.length = 0;
    push_pair(left.prev, judge);
    push_pair(c.left, judge);
  }
}

}  // namespace fulgur
