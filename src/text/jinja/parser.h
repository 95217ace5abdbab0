// Parser: tokens -> syntax tree, a recursive-descent port of jinja2/parser.py (statements,
// expression precedence, filters/tests, call arguments, slices, assignment targets).
#pragma once

#include <string_view>

#include "text/jinja/ast.h"

namespace inkling::jinja {

// Parses a whole template. Throws TemplateError(kSyntax) with line and column.
Body parse_template(std::string_view source);

}  // namespace inkling::jinja
