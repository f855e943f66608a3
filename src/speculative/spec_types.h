// Names of the speculative methods accepted by --spec: llama.cpp's --spec-type names
// (reference/llamacpp-speculative.md §1.1) and fulgur's own, parsed and checked before any model
// is loaded or token generated.
//
//   name(s)                                     fulgur runs
//   draft-simple, draft-model                   the draft-model drafter (-md: a small LM)
//   draft-dflash, draft-dspark, dflash,         the block drafter (-md: a dflash GGUF; DFlash,
//     dspark, dflash2                             DSpark or DFlash2 is read from its tensors)
//   ngram-simple, ngram                         the n-gram prompt lookup (drafters/ngram.h)
//   ngram-map-k, ngram-map-k4v                  llama.cpp's n-gram maps (drafters/ngram_map.h)
//   ngram-mod                                   llama.cpp's hashed n-gram pool (drafters/ngram_mod.h)
//   ngram-cache                                 llama.cpp's lookup caches (drafters/ngram_cache.h)
//   draft-mtp, mtp                              the MTP drafter (the target's own MTP block,
//                                                 no -md)
//   draft-eagle3, eagle3                        the EAGLE-3 drafter (-md: an eagle3 GGUF)
//   none                                        no speculation, whatever else is listed (as
//                                                 llama.cpp: `none` overrides the list)
//
// Names that land on the same fulgur drafter are merged (with a note); a name listed twice is an
// error. By default the methods are tried in llama.cpp's priority order, whatever the list's
// order: n-gram lookup first, then model drafters ("a draftless decoding has higher
// precedence", docs/speculative.md); SpecOrder::kListed keeps the list's order.
#pragma once

#include <string>
#include <vector>

namespace fulgur {

enum class SpecType { kDraftModel, kNgram, kNgramMapK, kNgramMapK4v, kNgramMod, kNgramCache, kDflash, kMtp, kEagle3 };
enum class SpecOrder { kLlamaCpp, kListed };

const char* spec_type_name(SpecType type);

struct SpecTypes {
  std::vector<SpecType> types;     // in the order they are tried (first non-empty draft wins)
  bool none = false;               // `none` was listed: no speculation
  std::vector<std::string> notes;  // what fulgur runs for names it maps or merges, for the log
};

// "ngram,draft-simple" -> the methods. Throws fulgur::Error naming an unknown, unsupported or
// repeated name (and listing the known ones), or an empty entry.
SpecTypes parse_spec_types(const std::string& list, SpecOrder order = SpecOrder::kLlamaCpp);

// "llama" | "listed" -> SpecOrder; throws naming the value otherwise.
SpecOrder parse_spec_order(const std::string& name);

}  // namespace fulgur
