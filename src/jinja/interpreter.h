// Tree-walking evaluator for a parsed template.
#pragma once

#include <string>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace fulgur::chat {

// Renders `body` with the variables of `context` (a dict). Throws fulgur::Error
// ("chat template error at line L, column C: ...") on runtime errors and raise_exception().
std::string render_template(const Body& body, const Value& context);

}  // namespace fulgur::chat
