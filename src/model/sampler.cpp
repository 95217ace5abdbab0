// The sampler chain (see sampler.h): logit bias, repetition / presence / frequency penalties and
// constraints on a copy of the logits, then the draw (sampler_draw.cpp) and the logprobs
// (logprobs.cpp), and the history the penalties need.
#include <algorithm>

#include "inkling/sampler.h"
#include "inkling/status.h"

namespace inkling {

Sampler::Sampler(const SamplingParams& p) : p_(p), state_(p.seed) {}

void Sampler::set_prompt(std::span<const int32_t> prompt) {
  seen_.clear();
  counts_.clear();
  if (p_.repetition_penalty != 1.0f) seen_.insert(prompt.begin(), prompt.end());
}

SampledToken Sampler::next(std::span<const float> logits) {
  INK_CHECK(!logits.empty());
  work_.assign(logits.begin(), logits.end());
  std::span<float> w(work_);
  apply_penalties(w);
  const std::optional<int32_t> forced = apply_constraints(w);
  INK_CHECK(!forced || (*forced >= 0 && size_t(*forced) < w.size()));
  const int32_t id = forced ? *forced : sample(w);
  SampledToken out;
  if (p_.logprobs)
    out = token_logprobs(w, id, p_.top_logprobs);
  else
    out.id = id;
  accept(id);
  return out;
}

void Sampler::accept(int32_t id) {
  for (const auto& c : constraints_) c->accept(id);
  if (p_.repetition_penalty != 1.0f) seen_.insert(id);
  if (p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f) ++counts_[id];
}

void Sampler::attach(std::shared_ptr<TokenConstraint> c) {
  INK_CHECK(c != nullptr);
  if (std::find(constraints_.begin(), constraints_.end(), c) == constraints_.end())
    constraints_.push_back(std::move(c));
}

void Sampler::detach(const TokenConstraint* c) {
  std::erase_if(constraints_, [&](const auto& x) { return x.get() == c; });
}

void Sampler::apply_penalties(std::span<float> w) const {
  // Ids outside the logits (a negative one converts to a huge size_t) are skipped.
  for (auto [id, bias] : p_.logit_bias)
    if (size_t(id) < w.size()) w[size_t(id)] += bias;
  if (p_.repetition_penalty != 1.0f)
    for (int32_t id : seen_)
      if (size_t(id) < w.size()) {
        float& x = w[size_t(id)];
        x = x > 0 ? x / p_.repetition_penalty : x * p_.repetition_penalty;
      }
  if (p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f)
    for (auto [id, n] : counts_)
      if (size_t(id) < w.size())
        w[size_t(id)] -= p_.frequency_penalty * float(n) + p_.presence_penalty;
}

std::optional<int32_t> Sampler::apply_constraints(std::span<float> w) {
  for (const auto& c : constraints_)
    if (std::optional<int32_t> forced = c->apply(w)) return forced;
  return std::nullopt;
}

}  // namespace inkling
