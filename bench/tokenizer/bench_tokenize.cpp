// Tokenizer encode throughput, single thread: MB/s and tokens/s on a large text (a file, or
// the parity corpus repeated plus generated English prose). Prints one JSON line at the end so
// bench/tokenizer_compare.py can compare with tiktoken and HF tokenizers in the same run.
//   bench_tokenize [--model DIR] [--file TEXT | --write-text OUT] [--mb N] [--reps R]
//                  [--ordinary] [--root REPO]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "inkling/tokenizer.h"

namespace {

std::string english_prose(size_t bytes, uint32_t seed) {
  static const char* kWords[] = {
      "the",        "of",         "and",    "to",      "in",       "is",      "was",        "that",
      "for",        "on",         "with",   "as",      "by",       "at",      "from",       "it",
      "his",        "an",         "were",   "are",     "which",    "this",    "be",         "or",
      "has",        "had",        "not",    "but",     "have",     "they",    "first",      "one",
      "their",      "its",        "new",    "after",   "who",      "also",    "two",        "been",
      "more",       "when",       "there",  "other",   "during",   "into",    "all",        "time",
      "can",        "may",        "such",   "between", "some",     "would",   "about",      "year",
      "people",     "city",       "under",  "later",   "many",     "while",   "where",      "then",
      "world",      "through",    "used",   "known",   "state",    "being",   "however",    "three",
      "school",     "found",      "group",  "London",  "American", "English", "French",     "Paris",
      "government", "university", "system", "music",   "history",  "don't",   "it's",       "1984",
      "42",         "(see",       "below)", "e.g.",    "$3.50",    "50%",     "well-known", "U.S."};
  std::mt19937 rng(seed);
  std::string out;
  out.reserve(bytes + 256);
  while (out.size() < bytes) {
    const int n = 5 + static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      std::string w = kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
      if (i == 0) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
      out += w;
      out += (i + 1 == n) ? "" : (rng() % 9 == 0 ? ", " : " ");
    }
    out += (rng() % 7 == 0) ? ".\n\n" : ". ";
  }
  return out;
}

std::string default_text(const std::string& root, size_t mb) {
  std::string corpus;
  std::ifstream in(root + "/tests/fixtures/tokenizer/corpus.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    corpus += nlohmann::json::parse(line)["text"].get<std::string>();
    corpus += "\n";
  }
  std::string text;
  const size_t target = mb << 20;
  uint32_t seed = 1;
  while (text.size() < target) {
    text += english_prose(3 * corpus.size() + 4096, seed++);  // mostly prose, some of everything
    text += corpus;
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = ".";
  std::string model = "tests/data/inkling";
  std::string file;
  std::string write_text;
  size_t mb = 8;
  int reps = 3;
  bool ordinary = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model")
      model = next();
    else if (a == "--file")
      file = next();
    else if (a == "--write-text")
      write_text = next();
    else if (a == "--mb")
      mb = std::stoul(next());
    else if (a == "--reps")
      reps = std::stoi(next());
    else if (a == "--root")
      root = next();
    else if (a == "--ordinary")
      ordinary = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--model DIR] [--file TEXT | --write-text OUT] [--mb N] "
                   "[--reps R] [--ordinary] [--root REPO]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!write_text.empty()) {
    // Only write the default text (for the comparison script) and exit.
    std::ofstream(write_text, std::ios::binary) << default_text(root, mb);
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = inkling::Tokenizer::load(model);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().message().c_str());
    return 1;
  }
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string text;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    text = default_text(root, mb);
  }
  double best = 1e30;
  std::vector<int32_t> ids;
  for (int r = 0; r < reps; ++r) {
    const auto a = std::chrono::steady_clock::now();
    ids = tok.value()->encode(text, !ordinary);
    best =
        std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids' decimal text, as the script does
  for (int32_t id : ids) {
    for (char c : std::to_string(id) + ",")
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  const double mbs = text.size() / best / 1e6;
  std::fprintf(stderr,
               "load %.2fs; %zu bytes -> %zu tokens; best of %d: %.3fs = %.2f MB/s, %.2f Mtok/s\n",
               load_s, text.size(), ids.size(), reps, best, mbs, ids.size() / best / 1e6);
  std::printf(
      "{\"bytes\": %zu, \"tokens\": %zu, \"seconds\": %.6f, \"mb_per_s\": %.3f, "
      "\"ids_fnv\": \"%016llx\", \"load_s\": %.3f}\n",
      text.size(), ids.size(), best, mbs, static_cast<unsigned long long>(h), load_s);
  return 0;
}
