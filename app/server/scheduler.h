// The scheduler: one thread owns the engine and N slots (sessions). Each step gathers every
// active slot's next input (a prefill chunk or one decode token) and runs ONE Engine::step over
// all of them (continuous batching); queued jobs join at the next step. Jobs carry token ids
// only; HTTP threads turn the emitted token events into text. Cancelled jobs (client gone, stop
// string) release their slot at the start of the next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "inkling/engine.h"
#include "inkling/media.h"
#include "inkling/sampler.h"
#include "inkling/speculative.h"
#include "metrics.h"
#include "prefix_cache.h"

namespace inkling::server {

struct JobParams {
  std::vector<int32_t> prompt;
  SamplingParams sampling;           // the whole chain: bias, penalties, logprobs, the draw
  int64_t max_tokens = -1;           // -1: until the context is full
  std::vector<int32_t> stop_ids;     // sampling one ends the job ("stop"); it is emitted
  std::vector<int64_t> snapshot_at;  // prompt positions worth a prefix-cache snapshot
  // TEST ONLY (--test-script): the script plays the model: token i of the answer gets a logit far
  // above the rest, so it is chosen unless a constraint (tool_choice) bans or forces another. A
  // plain job ends with the script; with ignore_eos or a constraint the model goes on after it.
  std::vector<int32_t> forced;
  bool ignore_eos = false;  // the request's ignore_eos: no end id ends the job
  // Decoding constraints (tool_choice, grammar) attached to the job's sampler in this order; run
  // on the scheduler thread.
  std::vector<std::shared_ptr<TokenConstraint>> constraints;
  // A grammar constraint is among them: decode plainly (a speculative round would show the
  // constraint draft tokens it never accepts).
  bool constrained = false;
  // Image/audio input: the tower rows (kept alive with the job) and, per prompt token, the row
  // that replaces its embedding (null for text; empty: no media). `key` is then the prompt's
  // identity for prefix reuse: the prompt with each tower row's position holding a negative id
  // hashed from the row's values (never run), so a prefix matches only with the same images.
  std::shared_ptr<const std::vector<MediaEmbedding>> media;
  std::vector<const float*> rows;
  std::vector<int32_t> key;
};

// One generated token: its id and, when sampling.logprobs, its logprob and top alternatives.
using TokenEvent = SampledToken;

// Shared between the HTTP thread that submitted it and the scheduler.
class Job {
 public:
  explicit Job(JobParams p) : params(std::move(p)) {}
  const JobParams params;

  // Consumer: waits for events; false once the job is finished and everything was read. With
  // max_wait, returns true with no events when none arrived in time (the caller polls its client).
  bool next(std::vector<TokenEvent>* out);
  bool next(std::vector<TokenEvent>* out, std::chrono::milliseconds max_wait);
  // Waits until the first token was emitted or the job ended (its prompt has been run).
  void wait_started();
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Valid once next() returned false.
  std::string finish_reason;  // "stop" (stop token), "length", "cancelled", "error"
  std::string error;
  int64_t cached_tokens = 0;
  std::chrono::steady_clock::time_point t_submit = std::chrono::steady_clock::now();

  // Producer (scheduler).
  void emit(TokenEvent ev);
  void finish(std::string reason, std::string error = "", int64_t cached = 0);
  int64_t generated = 0;  // scheduler-only

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
};

// Job::error of the jobs that stop() ends (the server answers them 503, not 500).
inline constexpr std::string_view kShutdownError = "[server] shutting down";

struct SchedulerOptions {
  int n_slots = 1;
  int64_t ctx_size = 4096;
  size_t max_queue = 64;
  int64_t batch_tokens = 512;  // prompt tokens per step, summed over slots
  size_t prefix_cache_bytes = size_t(1) << 30;
  int64_t min_snapshot_tokens = 16;  // shorter prefixes are not worth a snapshot
  // --draft K: jobs decode speculatively with K MTP drafts per round (jobs asking for logprobs
  // decode plainly); their rounds are verified together in one pass (step_batch). 0 = off.
  int draft = 0;
  int64_t draft_vocab = 0;  // --draft-vocab N (0 = every id)
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<Engine> engine, SchedulerOptions opts, Metrics* metrics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job; fails (nothing queued) when the queue is full or the scheduler stopped.
  Status submit(std::shared_ptr<Job> job);
  void stop();
  const SchedulerOptions& options() const { return opts_; }

 private:
  struct Slot;
  void loop();
  void admit(std::shared_ptr<Job> job);
  bool step();
  void finish_slot(Slot& s, const std::string& reason, const std::string& error = "");
  // Emits one sampled token of the slot's job and ends the job on a stop id, max_tokens or the
  // context; false when it ended.
  bool on_token(Slot& s, TokenEvent ev);
  // The speculative slots' part of a step: prompts of new ones, then one batched round.
  bool step_speculative();
  // Adds the slot's state at its current history to the prefix cache, counted in full.
  void snapshot_to_cache(Slot& s);

  std::shared_ptr<Engine> engine_;
  SchedulerOptions opts_;
  Metrics* metrics_;
  std::vector<std::unique_ptr<Slot>> slots_;
  PrefixCache cache_;
  uint64_t tick_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::atomic<int64_t> free_slots_{0};  // slots without a job (scheduler writes, submit reads)
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace inkling::server
