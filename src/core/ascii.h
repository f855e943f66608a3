// ASCII case mapping: names that are matched case-insensitively (convert's type and mix names,
// --tensor-type patterns) and Jinja's lower / upper, which is Python's str.lower / str.upper on
// the ASCII letters only. Bytes outside A-Z / a-z, UTF-8 included, pass through unchanged, so the
// result does not depend on the C locale.
#pragma once

#include <string>
#include <string_view>

namespace fulgur {

std::string ascii_lower(std::string_view s);
std::string ascii_upper(std::string_view s);

}  // namespace fulgur
