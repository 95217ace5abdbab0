// tool_choice constraint: a small state machine over the turn grammar of spec §3.1.
#include "tool_choice.h"

#include <limits>

namespace inkling::server {

ToolChoiceConstraint::ToolChoiceConstraint(ToolChoice mode, const std::string& name,
                                           const Tokenizer& tok, const SpecialTokenIds& ids,
                                           bool single_call)
    : mode_(mode), ids_(ids), single_call_(single_call) {
  if (mode == ToolChoice::kNamed) {
    call_prefix_ = tok.encode(name, /*allow_special=*/false);
    call_prefix_.push_back(ids.invoke_tool_json);
    const auto json = tok.encode("{\"name\":" + nlohmann::json(name).dump() + ",\"args\":{",
                                 /*allow_special=*/false);
    call_prefix_.insert(call_prefix_.end(), json.begin(), json.end());
  }
}

void ToolChoiceConstraint::ban(std::span<float> logits, std::initializer_list<int32_t> ids) const {
  for (int32_t id : ids)
    if (id >= 0 && size_t(id) < logits.size())
      logits[size_t(id)] = -std::numeric_limits<float>::infinity();
}

std::optional<int32_t> ToolChoiceConstraint::apply(std::span<float> logits) {
  if (mode_ == ToolChoice::kNone) {
    ban(logits, {ids_.invoke_tool_json, ids_.invoke_tool_text});
    return std::nullopt;
  }
  if (single_call_ && called_) return ids_.end_sampling;
  if (mode_ == ToolChoice::kAuto) return std::nullopt;
  if (!forced_.empty()) return forced_.front();
  if (called_) return std::nullopt;
  const std::initializer_list<int32_t> enders = {ids_.end_sampling, ids_.endoftext};
  switch (state_) {
    case State::kHeader:
      if (mode_ == ToolChoice::kNamed) {
        // Reasoning may come first; anything else becomes the forced call.
        size_t best = 0;
        for (size_t i = 1; i < logits.size(); ++i)
          if (logits[i] > logits[best]) best = i;
        if (int32_t(best) == ids_.content_thinking) return ids_.content_thinking;
        forced_.assign(call_prefix_.begin(), call_prefix_.end());
        return forced_.front();
      }
      ban(logits, enders);
      ban(logits, {ids_.content_text, ids_.end_message, ids_.message_model});
      return std::nullopt;
    case State::kAfter:
      return ids_.message_model;  // another block must follow: the call has not happened yet
    case State::kName:
      ban(logits, enders);
      ban(logits, {ids_.content_text, ids_.end_message, ids_.message_model, ids_.content_thinking});
      return std::nullopt;
    case State::kReasoning:
    case State::kArgs:
    case State::kText:
      ban(logits, enders);
      return std::nullopt;
  }
  return std::nullopt;
}

void ToolChoiceConstraint::accept(int32_t id) {
  if (!forced_.empty() && forced_.front() == id) forced_.pop_front();
  if (id == ids_.message_model) {
    state_ = State::kHeader;
  } else if (id == ids_.content_thinking) {
    state_ = State::kReasoning;
  } else if (id == ids_.content_text) {
    state_ = State::kText;
  } else if (id == ids_.invoke_tool_json || id == ids_.invoke_tool_text) {
    state_ = State::kArgs;
  } else if (id == ids_.end_message) {
    if (state_ == State::kArgs) called_ = true;
    state_ = State::kAfter;
  } else if (state_ == State::kHeader) {
    state_ = State::kName;
  }
}

}  // namespace inkling::server
