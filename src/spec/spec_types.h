// Names of the speculative methods accepted by --spec (llama.cpp's --spec-type names are
// accepted as aliases), parsed and checked before any model is loaded or token generated.
#pragma once

#include <string>
#include <vector>

namespace fulgur {

enum class SpecType { kDraftModel, kNgram, kDflash };

const char* spec_type_name(SpecType type);

// "ngram,draft-model" -> types in priority order (first non-empty draft wins per step).
// Accepted: draft-model (alias draft-simple), ngram (alias ngram-simple), dflash (alias
// draft-dflash); "none" alone means no speculation. Throws fulgur::Error naming an unknown or
// repeated name and listing the known ones.
std::vector<SpecType> parse_spec_types(const std::string& list);

}  // namespace fulgur
