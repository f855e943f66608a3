// Where the trained zoo models are: $FULGUR_ZOO_DIR, else ../shared/zoo beside the checkout
// (where the project's machines and CI place shared/).
#pragma once

#include <cstdlib>
#include <string>

namespace fulgur::test {

inline std::string zoo_dir() {
  const char* env = std::getenv("FULGUR_ZOO_DIR");
  return env != nullptr ? std::string(env) : std::string(FULGUR_SOURCE_DIR) + "/../shared/zoo";
}

}  // namespace fulgur::test
