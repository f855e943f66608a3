#include "spec/spec_types.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace fulgur {

const char* spec_type_name(SpecType type) {
  switch (type) {
    case SpecType::kDraftModel: return "draft-model";
    case SpecType::kNgram: return "ngram";
    case SpecType::kDflash: return "dflash";
  }
  return "?";
}

std::vector<SpecType> parse_spec_types(const std::string& list) {
  std::vector<SpecType> out;
  if (list.empty() || list == "none") return out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    SpecType t;
    if (name == "draft-model" || name == "draft-simple") {
      t = SpecType::kDraftModel;
    } else if (name == "ngram" || name == "ngram-simple") {
      t = SpecType::kNgram;
    } else if (name == "dflash" || name == "draft-dflash" || name == "dspark" || name == "dflash2" ||
               name == "draft-dspark") {
      t = SpecType::kDflash;
    } else {
      fail("--spec: unknown speculative method '", name, "' in '", list,
           "' (known: draft-model, ngram, dflash (= dspark, dflash2); or none)");
    }
    FULGUR_CHECK(std::find(out.begin(), out.end(), t) == out.end(), "--spec: '", name,
                 "' is listed twice in '", list, "'");
    out.push_back(t);
  }
  FULGUR_CHECK(!out.empty(), "--spec: empty list '", list, "'");
  return out;
}

}  // namespace fulgur
