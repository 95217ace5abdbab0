// The per-token cost of grammar-constrained decoding on a real vocabulary (default: the Inkling
// 200k tokenizer of tests/data/inkling): builds the vocabulary trie, then samples sequences
// uniformly among the allowed tokens (every allowed token as likely: more distinct matcher
// states than a trained model visits, so a pessimistic figure) under several grammars and
// reports microseconds per token: overall, in trie walks (first visit of a state, or a tight
// token budget) and for the rest (cached mask copy + applying it to the logits).
//   bench_grammar_mask [--model DIR] [--runs N] [--tokens N]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "inkling/grammar.h"

namespace {

struct Case {
  const char* name;
  std::string gbnf;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace inkling;
  std::string model = "tests/data/inkling";
  int runs = 8, tokens = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model"))
      model = argv[i + 1];
    else if (!std::strcmp(argv[i], "--runs"))
      runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--tokens"))
      tokens = std::atoi(argv[i + 1]);
  }
  auto tok = Tokenizer::load(model);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().message().c_str());
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto vocab = VocabIndex::build(*tok.value());
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("vocabulary: %zu ids, trie of %zu nodes built in %.0f ms\n", vocab->n_tokens(),
              vocab->n_nodes(), build_ms);
  const auto person = nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "email":{"type":"string","pattern":"^[a-z]+@[a-z]+\\.com$"},"tags":{"type":"array",
      "items":{"type":"string"},"maxItems":4},"bio":{"type":"string","maxLength":40}},
      "required":["name","age","email","tags","bio"],"additionalProperties":false})");
  std::vector<Case> cases = {{"json_object", Grammar::json_object_gbnf()},
                             {"json_schema(person)", json_schema_to_gbnf(person).value()},
                             {"json value", Grammar::json_value_gbnf()}};
  std::mt19937 rng(1);
  std::vector<float> logits(vocab->n_tokens());
  const int32_t eos = tok.value()->token_id("<|content_model_end_sampling|>").value_or(0);
  for (const auto& c : cases) {
    auto g = Grammar::parse(c.gbnf);
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", g.status().message().c_str());
      return 1;
    }
    GrammarStats total;
    int64_t n = 0;
    for (int r = 0; r < runs; ++r) {
      GrammarConstraint gc(g.value(), vocab, {{eos}, tokens});
      for (int step = 0; step < tokens; ++step) {
        std::fill(logits.begin(), logits.end(), 0.f);
        int32_t id = 0;
        if (auto f = gc.apply(logits)) {
          id = *f;
        } else {
          std::vector<int32_t> ok;
          for (size_t i = 0; i < logits.size(); ++i)
            if (std::isfinite(logits[i])) ok.push_back(int32_t(i));
          if (ok.empty()) break;
          id = ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng)];
        }
        gc.accept(id);
        ++n;
        if (id == eos) break;
      }
      const GrammarStats& s = gc.stats();
      total.masks += s.masks;
      total.walks += s.walks;
      total.nodes += s.nodes;
      total.mask_seconds += s.mask_seconds;
      total.walk_seconds += s.walk_seconds;
    }
    std::printf(
        "%-20s %6lld tokens: %7.1f us/token (walks: %lld = %.0f%% of steps, %.0f us each, %.0f "
        "nodes each; other steps %.1f us)\n",
        c.name, (long long)n, 1e6 * total.mask_seconds / double(total.masks),
        (long long)total.walks, 100.0 * double(total.walks) / double(total.masks),
        total.walks ? 1e6 * total.walk_seconds / double(total.walks) : 0.0,
        total.walks ? double(total.nodes) / double(total.walks) : 0.0,
        total.masks > total.walks
            ? 1e6 * (total.mask_seconds - total.walk_seconds) / double(total.masks)
            : 0.0);
  }
  // A typical answer replayed token by token (what a trained model would write): the cost of
  // masking along it, cold (first request) and warm (the same constraint states seen before).
  const std::string answer =
      R"({"name": "Ada Lovelace", "age": 36, "email": "ada@analytical.com", "tags": ["math", )"
      R"("poetry", "engines"], "bio": "Wrote the first published algorithm."})";
  const std::vector<int32_t> ids = tok.value()->encode(answer, false);
  auto g = Grammar::parse(cases[1].gbnf);
  GrammarStats cold, warm;
  for (int pass = 0; pass < 2; ++pass) {
    // Pass 1 reuses nothing across constraints (each has its own caches): both passes are cold
    // per constraint; the warm figure is a second answer on the same constraint object below.
    GrammarConstraint gc(g.value(), vocab, {{eos}, -1});
    for (int32_t id : ids) {
      std::fill(logits.begin(), logits.end(), 0.f);
      gc.apply(logits);
      if (!std::isfinite(logits[size_t(id)])) {
        std::fprintf(stderr, "replay: token %d banned\n", id);
        return 1;
      }
      gc.accept(id);
    }
    (pass == 0 ? cold : warm) = gc.stats();
  }
  std::printf(
      "replay of a %zu-token answer (json_schema(person)): %.1f us/token (%lld trie walks, %lld "
      "nodes visited, %lld taken whole)\n",
      ids.size(), 1e6 * cold.mask_seconds / double(cold.masks), (long long)cold.walks,
      (long long)cold.nodes, (long long)cold.skipped);
  (void)warm;
  return 0;
}