// Stop-string matching, chat delta assembly and id generation (see output.h).
#include "output.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>

namespace inkling::server {

std::string StopMatcher::push(std::string_view text) {
  if (hit_) return std::string();
  pending_ += text;
  if (stops_.empty()) return std::exchange(pending_, std::string());
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    hit_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string. Stop strings are
  // valid UTF-8, so the held-back part starts on a character boundary.
  size_t hold = 0;
  for (const auto& s : stops_)
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  return hit_ ? std::string() : std::exchange(pending_, std::string());
}

namespace {

std::string random_alnum(size_t n) {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}() ^
                             uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::lock_guard<std::mutex> lk(mu);
  std::string s(n, ' ');
  for (auto& c : s) c = kChars[rng() % (sizeof(kChars) - 1)];
  return s;
}

}  // namespace

std::string make_call_id() {
  return "call_" + random_alnum(24);
}

std::string make_request_id(const char* prefix) {
  return std::string(prefix) + random_alnum(24);
}

// ---- chat ------------------------------------------------------------------------------------

ChatOutput::ChatOutput(std::shared_ptr<const Tokenizer> tok, const SpecialTokenIds& ids,
                       std::vector<std::string> stops)
    : tok_(tok),
      ids_(ids),
      parser_(ids),
      dec_(tok, /*skip_special=*/true),
      content_stop_(stops),
      reasoning_stop_(stops) {}

ChatDelta ChatOutput::convert(ParseDelta d) {
  ChatDelta out;
  out.reasoning = reasoning_stop_.push(d.reasoning);
  out.content = content_stop_.push(d.content);
  if (stop_string_hit()) return out;  // nothing after a stop string counts
  for (auto& tc : d.tool_calls) {
    ChatToolDelta td;
    td.index = tc.index;
    while (call_ids_.size() <= tc.index) {
      call_ids_.push_back(make_call_id());
      call_names_.emplace_back();
      call_args_.emplace_back();
    }
    if (!tc.name.empty()) {
      td.id = call_ids_[tc.index];
      td.name = tc.name;
      call_names_[tc.index] = tc.name;
    }
    td.arguments = std::move(tc.arguments);
    call_args_[tc.index] += td.arguments;
    out.tool_calls.push_back(std::move(td));
  }
  reasoning_ += out.reasoning;
  content_ += out.content;
  return out;
}

ChatDelta ChatOutput::push(int32_t id) {
  if (done()) return ChatDelta();
  if (ignore_eos_ && (id == ids_.end_sampling || id == ids_.endoftext)) return ChatDelta();
  const bool control = id >= ids_.first_control || tok_->is_added(id);
  std::string text = control ? std::string() : dec_.push(id);
  const bool was_reasoning = parser_.in_reasoning();
  ParseDelta d = parser_.push(id, text);
  if (was_reasoning || parser_.in_reasoning()) ++reasoning_tokens_;
  return convert(std::move(d));
}

ChatDelta ChatOutput::finish() {
  ChatDelta out;
  if (!stop_string_hit()) out = convert(parser_.finish());
  std::string r = reasoning_stop_.flush(), c = content_stop_.flush();
  reasoning_ += r;
  content_ += c;
  out.reasoning += r;
  out.content += c;
  return out;
}

std::vector<ChatToolCall> ChatOutput::tool_calls() const {
  std::vector<ChatToolCall> out;
  const auto& parsed = parser_.result().tool_calls;
  for (size_t i = 0; i < call_ids_.size(); ++i) {
    ChatToolCall c;
    c.id = call_ids_[i];
    c.name = i < parsed.size() ? parsed[i].name : call_names_[i];
    c.arguments = i < parsed.size() ? parsed[i].arguments : call_args_[i];
    if (c.arguments.empty()) c.arguments = "{}";
    if (!c.name.empty()) out.push_back(std::move(c));
  }
  return out;
}

// ---- completions -----------------------------------------------------------------------------

TextOutput::TextOutput(std::shared_ptr<const Tokenizer> tok, bool skip_special,
                       std::vector<std::string> stops, std::vector<int32_t> stop_ids)
    : tok_(tok), dec_(tok, skip_special), stop_(std::move(stops)), stop_ids_(std::move(stop_ids)) {}

std::string TextOutput::push(int32_t id) {
  if (std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end()) return std::string();
  return stop_.push(dec_.push(id));
}

std::string TextOutput::finish() {
  std::string tail = stop_.push(dec_.flush());
  return tail + stop_.flush();
}

}  // namespace inkling::server
