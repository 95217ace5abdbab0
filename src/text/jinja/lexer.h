// Lexer: template source -> tokens, a port of Jinja2's lexer with the environment transformers
// uses (trim_blocks, lstrip_blocks, default delimiters, `-`/`+` whitespace control, raw blocks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inkling::jinja {

enum class Tok {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof,
};

struct Token {
  Tok type;
  std::string text;  // data / name / decoded string / operator / number source
  int line = 1;
  int column = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws TemplateError(kSyntax) with line and column.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& opts = {});

}  // namespace inkling::jinja
