// Incremental matching of bytes against a Grammar: the set of parse stacks llama.cpp's grammar
// keeps (grammar/stacks.h), fed byte by byte (UTF-8 is decoded here, and a partly read
// character is kept as long as some stack can still read what it may become).
//
// A matcher is a value: copying it is a snapshot (a few small vectors), which is how the
// speculative generator explores a draft and rolls it back.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stacks.h"

namespace fulgur {

class GrammarMatcher {
 public:
  GrammarMatcher() = default;
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  bool valid() const { return grammar_ != nullptr; }
  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& shared_grammar() const { return grammar_; }

  // Reads one byte; false (state unchanged) when the grammar cannot go on with it.
  bool accept_byte(uint8_t byte);
  // Reads all the bytes, or none of them (false, state unchanged).
  bool accept_bytes(std::string_view bytes);
  // Whether `bytes` could be read now (nothing changes).
  bool can_accept(std::string_view bytes) const;
  // The input so far is a whole sentence of the grammar (generation may end here).
  bool complete() const;
  // Some byte can still follow (false: the grammar is complete and nothing may follow).
  bool can_continue() const;

  // The state the token masker starts from.
  const std::vector<grammar_stacks::Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tops() const { return tops_; }
  const grammar_stacks::Utf8State& partial() const { return partial_; }

 private:
  // Drops arena nodes no stack reaches any more, so snapshots stay small.
  void compact();

  std::shared_ptr<const Grammar> grammar_;
  std::vector<grammar_stacks::Node> nodes_;  // the arena every stack lives in
  std::vector<int32_t> tops_;                // one per live stack (kAccepted: empty stack)
  grammar_stacks::Utf8State partial_;
  std::vector<int32_t> scratch_;
};

}  // namespace fulgur
