// What the demo model (models/inkling-demo) was trained to answer, checked the same way by the
// chat and server tests. A verse answer is a heading naming the requested word and a KJV
// reference, then the verse on the next line:
//   "A verse about light, from Psalms 27:1:\nThe LORD is my light and my salvation; ..."
#pragma once

#include <algorithm>
#include <cctype>
#include <regex>
#include <string>

namespace inkling::testing {

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct VerseAnswer {
  bool ok = false;
  std::string word, reference, verse;
};

inline VerseAnswer parse_verse_answer(const std::string& s) {
  static const std::regex re(
      R"(^\s*A verse about ([a-z]+), from ((?:[1-3] )?[A-Z][A-Za-z]+(?: [A-Za-z]+)* [0-9]+:[0-9]+):\n([^\n]+))");
  std::smatch m;
  VerseAnswer v;
  if (!std::regex_search(s, m, re)) return v;
  v.ok = true, v.word = m[1], v.reference = m[2], v.verse = m[3];
  return v;
}

// Words in the verse line (a verse, not a fragment).
inline int word_count(const std::string& s) {
  int n = 0;
  bool in = false;
  for (char c : s) {
    const bool w = c != ' ' && c != '\t';
    n += w && !in;
    in = w;
  }
  return n;
}

}  // namespace inkling::testing
