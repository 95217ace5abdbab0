// Token sampling as one chain over a step's logits, shared by the CLI and the server. The stages
// run in this fixed order (each optional, off by default):
//   1. logit bias          SamplingParams::logit_bias added to the logits
//   2. repetition penalty  over the prompt + generated tokens (HF / llama.cpp style)
//   3. presence/frequency  over the generated tokens (OpenAI style)
//   4. constraints         TokenConstraint hooks: ban tokens (-inf) or force one
//   5. logprobs            log-softmax of the logits after 1-4 (reported, never a filter)
//   6. the draw            temperature, top-k, top-p, min-p, then a draw from a splitmix64 stream
//                          seeded by the caller; temperature 0 = greedy (argmax, lowest id on ties)
// Same seed + same logits + same params + same history = same token.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace inkling {

struct SamplingParams {
  // Stage 6: the draw.
  float temperature = 1.0f;
  int top_k = 0;       // 0 = off
  float top_p = 1.0f;  // 1 = off
  float min_p = 0.0f;  // 0 = off
  uint64_t seed = 0;
  // Stage 1: (token id, bias) added to that token's logit, in this order; a repeated id gets
  // every one of its biases, an id outside the logits is ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Stage 2: every distinct token of the prompt and of the output so far has a positive logit
  // divided by this, a negative one multiplied by it. 1 = off.
  float repetition_penalty = 1.0f;
  // Stage 3: a generated token's logit loses presence_penalty once plus frequency_penalty per
  // occurrence so far. 0 = off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Stage 5: report the chosen token's log-probability, and the top_logprobs most likely tokens
  // (0 = none). Costs one pass over the logits, plus O(vocab x top_logprobs) at worst.
  bool logprobs = false;
  int top_logprobs = 0;
};

// A decoding constraint (tool_choice, later a grammar): it bans tokens before the draw and follows
// the output. It may be attached and detached mid-generation (e.g. only for the answer, not the
// reasoning); while attached it is told every chosen token. Runs on the sampling thread.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Called with the logits after stages 1-3 (and after earlier constraints). Sets the logits of
  // disallowed tokens to -inf, and/or returns a token to force: then no draw happens (the random
  // stream does not advance) and later constraints are not asked this step.
  virtual std::optional<int32_t> apply(std::span<float> logits) = 0;
  // The token chosen this step (drawn or forced).
  virtual void accept(int32_t id) = 0;
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// What Sampler::next() chose and, when asked for, its log-probability and the alternatives.
struct SampledToken {
  int32_t id = 0;
  float logprob = 0;              // params.logprobs: log-softmax of the stage 1-4 logits at id
  std::vector<TokenLogprob> top;  // params.top_logprobs most likely, best first (ties: lower id)
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  const SamplingParams& params() const { return p_; }

  // Starts a sequence: `prompt` is the history the repetition penalty sees, the generated-token
  // counts are cleared. The random stream and the attached constraints are kept. Ids < 0 are
  // ignored.
  void set_prompt(std::span<const int32_t> prompt);

  // The whole chain (stages 1-6) on one step's logits (read only; the work happens in a buffer
  // the sampler owns), then accept() of the chosen token.
  SampledToken next(std::span<const float> logits);

  // Records `id` as generated (for the penalties) and tells every attached constraint. next()
  // does this itself; call it for tokens the caller appends without sampling.
  void accept(int32_t id);

  // Constraints run in the order they were attached. Detaching an unknown one does nothing.
  void attach(std::shared_ptr<TokenConstraint> c);
  void detach(const TokenConstraint* c);

  // The logits after stages 1-4 of the last next() call (valid until the next call).
  std::span<const float> processed_logits() const { return work_; }

  // Stage 6 alone: temperature, top-k, top-p, min-p and the draw; no history, nothing recorded.
  int32_t sample(std::span<const float> logits);

  // For speculative decoding (include/inkling/speculative.h), which must draw from exactly the
  // distribution next() draws from:
  // filtered(): stage 6's distribution without the draw: temperature, top-k, top-p, min-p as
  // probabilities over the logits (greedy: all mass on the argmax). Nothing recorded.
  void filtered(std::span<const float> logits, std::vector<float>* probs);
  // distribution(): stages 1-4 with the current history, then filtered(); returns the token a
  // constraint forces instead (probs untouched). Nothing recorded: accept() the chosen token.
  std::optional<int32_t> distribution(std::span<const float> logits, std::vector<float>* probs);
  // The next number in [0, 1) of the draw's random stream.
  double uniform();

 private:
  void apply_penalties(std::span<float> w) const;  // stages 1-3
  std::optional<int32_t> apply_constraints(std::span<float> w);
  double next_uniform();
  size_t candidates(std::span<const float> logits);

  SamplingParams p_;
  uint64_t state_;
  std::vector<std::shared_ptr<TokenConstraint>> constraints_;
  // History, kept only while its stage is on. Each stage changes every listed id once, by a
  // rule of that id's own logit, so the containers' order does not matter.
  std::unordered_set<int32_t> seen_;             // prompt + generated ids (stage 2)
  std::unordered_map<int32_t, int32_t> counts_;  // generated id -> occurrences (stage 3)
  std::vector<float> work_;                      // the logits being processed
  std::vector<std::pair<float, int32_t>> cand_;  // draw candidates, reused across calls
};

// The log-softmax of `logits` at `id`, and the `top_n` most likely tokens (best first, ties by
// lower id); what next() reports in stage 5.
SampledToken token_logprobs(std::span<const float> logits, int32_t id, int top_n);

int32_t argmax(std::span<const float> logits);

}  // namespace inkling
