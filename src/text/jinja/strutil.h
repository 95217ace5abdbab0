// Python str semantics over UTF-8 bytes: code point decode/encode, whitespace (str.isspace),
// case mapping (str.upper/lower via the C.UTF-8 locale, ASCII fallback), and small helpers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inkling::jinja {

// Decodes UTF-8 into code points; an invalid byte decodes to itself (0x80..0xFF) so that
// encoding back is lossless for ASCII-compatible garbage.
std::vector<char32_t> utf8_decode(std::string_view s);
void utf8_append(std::string& out, char32_t cp);
std::string utf8_encode(const std::vector<char32_t>& cps, size_t begin, size_t end);
size_t utf8_length(std::string_view s);  // number of code points

bool py_isspace(char32_t c);
bool py_isalnum(char32_t c);
bool py_isalpha(char32_t c);
bool py_isdigit(char32_t c);
char32_t py_upper(char32_t c);
char32_t py_lower(char32_t c);
bool py_isupper(char32_t c);
bool py_islower(char32_t c);
bool py_isprintable(char32_t c);

std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);
std::string str_title(std::string_view s);       // Python str.title()
std::string str_capitalize(std::string_view s);  // Python str.capitalize()
std::string str_swapcase(std::string_view s);

// strip/lstrip/rstrip with Python semantics (chars == nullptr: whitespace).
std::string str_strip(std::string_view s, const std::string* chars, bool left, bool right);
std::string str_replace(std::string_view s, std::string_view old, std::string_view repl,
                        int64_t count);
// str.split(sep=None/sep, maxsplit) and str.rsplit.
std::vector<std::string> str_split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> str_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> str_splitlines(std::string_view s, bool keepends);

bool starts_with(std::string_view s, std::string_view p);
bool ends_with(std::string_view s, std::string_view p);

}  // namespace inkling::jinja
