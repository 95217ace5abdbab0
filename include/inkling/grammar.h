// Grammar-constrained decoding: a context-free grammar over bytes (written in a small GBNF-like
// format, docs/grammar.md, or compiled from a JSON-schema subset), matched incrementally by a
// pushdown matcher, and a TokenConstraint that masks every token whose bytes cannot continue
// the grammar. Token masks come from one walk of a byte trie over the vocabulary (VocabIndex,
// built once per tokenizer), with the matcher's byte transitions and each state's mask cached.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "inkling/sampler.h"
#include "inkling/status.h"
#include "inkling/tokenizer.h"

namespace inkling {

class Grammar {
 public:
  // Parses GBNF-like text (docs/grammar.md). `<|name|>` terminals are special tokens looked up
  // in `tok` (an error without one). Errors: "[grammar] line L, column C: ...", undefined rules,
  // a missing `root`, left recursion, rules that can never finish.
  // `root` names the start rule.
  static Result<Grammar> parse(std::string_view text, const Tokenizer* tok = nullptr,
                               const std::string& root = "root");
  // Any JSON value (json_object mode uses json_object_gbnf()).
  static std::string json_value_gbnf();
  static std::string json_object_gbnf();

  size_t n_rules() const;
  struct Impl;
  const std::shared_ptr<const Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// The JSON-schema subset as GBNF rules whose names start with `prefix` (the schema's own rule is
// `prefix` + "root"). Supported: type (and type lists), properties (emitted in schema order),
// required, additionalProperties (false / true / a schema), items, prefixItems, minItems,
// maxItems, enum, const, anyOf, oneOf (as anyOf), allOf of one schema, $ref to #/$defs/... or
// #/definitions/... (recursion allowed), string minLength / maxLength / pattern (a regex subset,
// docs/grammar.md), nullable. Annotation keywords are ignored; keywords whose constraint the
// grammar cannot express (not, if/then/else, patternProperties, uniqueItems: true, minimum /
// maximum, multipleOf, format, ...) are an error when `strict`, else ignored.
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                        const std::string& prefix = "", bool strict = false);

// A byte trie over the ordinary tokens of a vocabulary (added/special tokens are matched by id).
// Immutable once built; share one per tokenizer.
class VocabIndex {
 public:
  static std::shared_ptr<const VocabIndex> build(const Tokenizer& tok);
  size_t n_tokens() const;  // 1 + the largest id
  size_t n_nodes() const;   // trie nodes
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

struct GrammarConstraintOptions {
  // Tokens that end the output: allowed only once the grammar is complete, and forced when the
  // grammar can go no further. Empty when the grammar itself spells its end (a `<|...|>` token).
  std::vector<int32_t> eos_ids;
  // Tokens the output may still take (-1 = unlimited). When what is left is just enough to
  // finish, only tokens that bring the grammar closer to its end are allowed, so the output is
  // complete when the budget runs out (needs max_tokens >= the shortest completion).
  int64_t max_tokens = -1;
};

// Per-constraint counters (for benchmarks and logs).
struct GrammarStats {
  int64_t masks = 0;        // apply() calls that masked
  int64_t cached = 0;       // ... of which found their state's mask cached
  int64_t walks = 0;        // trie walks (cold masks + budget-mode masks)
  int64_t nodes = 0;        // trie nodes visited by those walks
  int64_t skipped = 0;      // ... and nodes taken whole (every byte below loops to one state)
  double mask_seconds = 0;  // time inside apply()
  double walk_seconds = 0;  // ... of which in trie walks
};

class GrammarConstraint : public TokenConstraint {
 public:
  GrammarConstraint(const Grammar& g, std::shared_ptr<const VocabIndex> vocab,
                    GrammarConstraintOptions opts = {});
  ~GrammarConstraint() override;
  std::optional<int32_t> apply(std::span<float> logits) override;
  void accept(int32_t id) override;

  // The allowed tokens of the current step as a bitmap over ids (what apply() masks with).
  const std::vector<uint64_t>& allowed();
  bool complete() const;  // the output so far is a complete sentence of the grammar
  bool failed() const;    // a token outside the grammar was accepted (constraint gave up)
  // An upper bound on the tokens still needed to finish (one per byte or special token; 0 when
  // complete).
  int64_t distance() const;
  const GrammarStats& stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A byte-level matcher for tests and tools: feeds bytes and special tokens directly.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(const Grammar& g);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  bool accept_bytes(std::string_view bytes);  // false (state unchanged) if they do not fit
  bool accept_token(int32_t special_id);
  bool complete() const;
  bool can_continue() const;  // some byte or token may follow
  int64_t distance() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace inkling
