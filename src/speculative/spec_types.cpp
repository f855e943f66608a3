#include "speculative/spec_types.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "core/error.h"

namespace fulgur {
namespace {

struct Name {
  const char* name;
  std::optional<SpecType> type;  // nullopt: recognised but not supported yet
  const char* note;              // what fulgur runs instead, when it is not that method
};

constexpr Name kNames[] = {
    {"draft-simple", SpecType::kDraftModel, nullptr},
    {"draft-model", SpecType::kDraftModel, nullptr},
    {"draft-dflash", SpecType::kDflash, nullptr},
    {"draft-dspark", SpecType::kDflash, nullptr},
    {"dflash", SpecType::kDflash, nullptr},
    {"dspark", SpecType::kDflash, nullptr},
    {"dflash2", SpecType::kDflash, nullptr},
    {"ngram-simple", SpecType::kNgram, nullptr},
    {"ngram", SpecType::kNgram, nullptr},
    {"ngram-map-k", SpecType::kNgramMapK, nullptr},
    {"ngram-map-k4v", SpecType::kNgramMapK4v, nullptr},
    {"ngram-mod", SpecType::kNgramMod, nullptr},
    {"ngram-cache", SpecType::kNgramCache, nullptr},
    {"draft-eagle3", SpecType::kEagle3, nullptr},
    {"eagle3", SpecType::kEagle3, nullptr},
    {"draft-mtp", SpecType::kMtp, nullptr},
    {"mtp", SpecType::kMtp, nullptr},
};

// llama.cpp's impl priority (common/speculative.cpp): ngram-simple, -map-k, -map-k4v, -mod, -cache, then
// model drafters.
int priority(SpecType t) {
  switch (t) {
    case SpecType::kNgram: return 0;
    case SpecType::kNgramMapK: return 1;
    case SpecType::kNgramMapK4v: return 2;
    case SpecType::kNgramMod: return 3;
    case SpecType::kNgramCache: return 4;
    case SpecType::kDraftModel: return 5;
    case SpecType::kEagle3: return 6;
    case SpecType::kMtp: return 7;
    case SpecType::kDflash: return 8;
  }
  return 9;
}

std::string known_names() {
  std::string out;
  for (const Name& n : kNames) {
    if (n.type) out += cat(out.empty() ? "" : ", ", n.name);
  }
  return out + "; or none";
}

}  // namespace

const char* spec_type_name(SpecType type) {
  switch (type) {
    case SpecType::kDraftModel: return "draft-model";
    case SpecType::kNgram: return "ngram";
    case SpecType::kNgramMapK: return "ngram-map-k";
    case SpecType::kNgramMapK4v: return "ngram-map-k4v";
    case SpecType::kNgramMod: return "ngram-mod";
    case SpecType::kNgramCache: return "ngram-cache";
    case SpecType::kDflash: return "dflash";
    case SpecType::kMtp: return "draft-mtp";
    case SpecType::kEagle3: return "draft-eagle3";
  }
  return "?";
}

SpecOrder parse_spec_order(const std::string& name) {
  if (name == "llama") return SpecOrder::kLlamaCpp;
  if (name == "listed") return SpecOrder::kListed;
  fail("--spec-order '", name, "': expected llama (n-gram methods first, as llama.cpp) or listed");
}

SpecTypes parse_spec_types(const std::string& list, SpecOrder order) {
  SpecTypes out;
  if (list.empty()) return out;
  std::vector<std::string> seen;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    FULGUR_CHECK(!name.empty(), "--spec: empty entry in '", list, "'");
    FULGUR_CHECK(std::find(seen.begin(), seen.end(), name) == seen.end(), "--spec: '", name,
                 "' is listed twice in '", list, "'");
    seen.push_back(name);
    if (name == "none") {
      out.none = true;
      continue;
    }
    const Name* found = nullptr;
    for (const Name& n : kNames) {
      if (name == n.name) found = &n;
    }
    FULGUR_CHECK(found != nullptr, "--spec: unknown speculative method '", name, "' in '", list,
                 "' (known: ", known_names(), ")");
    FULGUR_CHECK(found->type.has_value(), "--spec: '", name, "' (", found->note,
                 ") is not supported yet by fulgur (supported: ", known_names(), ")");
    if (found->note != nullptr) out.notes.push_back(cat("--spec ", name, ": ", found->note));
    if (std::find(out.types.begin(), out.types.end(), *found->type) != out.types.end()) {
      out.notes.push_back(cat("--spec ", name, ": runs the same fulgur drafter as an earlier entry (",
                              spec_type_name(*found->type), "); it is tried once"));
      continue;
    }
    out.types.push_back(*found->type);
  }
  if (out.none) {
    if (!out.types.empty()) out.notes.push_back(cat("--spec '", list, "': none overrides the list"));
    out.types.clear();
    return out;
  }
  if (order == SpecOrder::kLlamaCpp) {
    std::stable_sort(out.types.begin(), out.types.end(),
                     [](SpecType a, SpecType b) { return priority(a) < priority(b); });
  }
  return out;
}

}  // namespace fulgur
