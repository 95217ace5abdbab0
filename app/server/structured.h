// Structured output: response_format (json_object / json_schema), the `grammar` extension and
// tool_choice "required" / named as one grammar over the whole generated turn in Inkling's
// format (spec §3.1): an optional reasoning block, then either one text block holding the JSON
// or the tool-call blocks (NAME<|content_invoke_tool_json|>{"name":NAME,"args":ARGS}, ARGS from
// the tool's parameter schema), then the end-of-turn token.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api_types.h"
#include "inkling/grammar.h"
#include "inkling/tokenizer.h"

namespace inkling::server {

// The start rule of chat grammars (a user's `grammar` keeps its own `root` for the answer text).
extern const char* const kChatGrammarStart;

// The grammar text for a chat request, or "" when nothing is constrained.
std::optional<ApiError> chat_grammar(const ChatRequest& cr, std::string* out);
// The grammar text for a completion (the raw continuation; EOS ends it), or "".
std::optional<ApiError> completion_grammar(const GenerationRequest& g, std::string* out);

// The vocabulary trie, built on first use (about 0.2 s for the 200k vocabulary) and shared.
class VocabIndexCache {
 public:
  std::shared_ptr<const VocabIndex> get(const Tokenizer& tok);

 private:
  std::mutex mu_;
  std::shared_ptr<const VocabIndex> index_;
};

// Parses `text` (special tokens from `tok`) and builds the job's constraint; a grammar error is
// a 400 naming `param`.
std::optional<ApiError> make_grammar_constraint(const std::string& text, const Tokenizer& tok,
                                                std::shared_ptr<const VocabIndex> vocab,
                                                GrammarConstraintOptions opts,
                                                const std::string& param, const std::string& root,
                                                std::shared_ptr<GrammarConstraint>* out);

}  // namespace inkling::server
