// tool_choice as a token constraint: "none" bans the tool-call markers; "required" keeps the turn
// from ending (and from writing visible text) until one tool call block has closed; a named
// function additionally forces `<|message_model|>NAME<|content_invoke_tool_json|>{"name":"NAME",
// "args":` once the model leaves its reasoning. Runs on the scheduler thread (see scheduler.h).
#pragma once

#include <deque>
#include <vector>

#include "api_types.h"
#include "inkling/chat.h"
#include "inkling/tokenizer.h"
#include "scheduler.h"

namespace inkling::server {

class ToolChoiceConstraint : public TokenConstraint {
 public:
  // single_call (parallel_tool_calls: false): the turn ends after its first tool call.
  ToolChoiceConstraint(ToolChoice mode, const std::string& name, const Tokenizer& tok,
                       const SpecialTokenIds& ids, bool single_call = false);
  std::optional<int32_t> apply(std::span<float> logits) override;
  void accept(int32_t id) override;

 private:
  enum class State { kHeader, kReasoning, kName, kArgs, kText, kAfter };
  void ban(std::span<float> logits, std::initializer_list<int32_t> ids) const;
  ToolChoice mode_;
  SpecialTokenIds ids_;
  std::vector<int32_t> call_prefix_;  // named: NAME<|content_invoke_tool_json|>{"name":..,"args":
  std::deque<int32_t> forced_;
  State state_ = State::kHeader;
  bool called_ = false;
  bool single_call_ = false;
};

}  // namespace inkling::server
