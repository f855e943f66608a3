// Where the trained zoo models are: $FULGUR_ZOO_DIR, else ../shared/zoo beside the checkout
// (where the project's machines and CI place shared/).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fulgur::test {

inline std::string zoo_dir() {
  const char* env = std::getenv("FULGUR_ZOO_DIR");
  return env != nullptr ? std::string(env) : std::string(FULGUR_SOURCE_DIR) + "/../shared/zoo";
}

// The zoo's held-out Python files (its README: the files under /usr/lib/python3.11 whose
// int(sha1(relpath), 16) % 20 == 0): FULGUR_ZOO_HELDOUT's list, else listed by python3 into
// tmp_dir/heldout.txt. Empty when neither works.
inline std::vector<std::string> zoo_heldout_files(const std::string& tmp_dir) {
  std::string list;
  if (const char* l = std::getenv("FULGUR_ZOO_HELDOUT")) {
    list = l;
  } else {
    list = tmp_dir + "/heldout.txt";
    const std::string cmd =
        "python3 -c \"import hashlib,pathlib;r=pathlib.Path('/usr/lib/python3.11');"
        "[print(p) for p in sorted(r.rglob('*.py')) if int(hashlib.sha1(str(p.relative_to(r)).encode())"
        ".hexdigest(),16)%20==0]\" > '" + list + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) return {};
  }
  std::vector<std::string> out;
  std::ifstream in(list);
  std::string path;
  while (std::getline(in, path)) {
    if (!path.empty() && std::filesystem::exists(path)) out.push_back(path);
  }
  return out;
}

}  // namespace fulgur::test
