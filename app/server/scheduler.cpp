// Scheduler thread: admission (with prefix-cache reuse), one batched Engine::step per iteration
// over every active slot, sampling with each job's Sampler chain (bias, penalties, constraints,
// logprobs), and slot release. Every path that ends a job goes through finish_slot(), which frees
// the slot.
#include "scheduler.h"

#include <algorithm>

namespace inkling::server {

namespace {
// A scripted token's logit (--test-script): far above any real logit, so it wins at every
// temperature and its probability rounds to 1.
constexpr float kScriptLogit = 1e4f;

// --test-script as the first constraint of the job's sampler: after the penalties, token i of the
// script gets kScriptLogit at generated position i; a later constraint (tool_choice) still sees
// and may override it.
class ScriptConstraint : public TokenConstraint {
 public:
  explicit ScriptConstraint(std::vector<int32_t> script) : script_(std::move(script)) {}
  std::optional<int32_t> apply(std::span<float> logits) override {
    if (pos_ < script_.size() && size_t(script_[pos_]) < logits.size())
      logits[size_t(script_[pos_])] = kScriptLogit;
    return std::nullopt;
  }
  void accept(int32_t) override { ++pos_; }

 private:
  std::vector<int32_t> script_;
  size_t pos_ = 0;  // tokens generated so far
};

// A token without logprobs (speculative rounds do not compute them).
TokenEvent token_event(int32_t id) {
  TokenEvent ev;
  ev.id = id;
  return ev;
}
}  // namespace

// ---- Job -------------------------------------------------------------------------------------

bool Job::next(std::vector<TokenEvent>* out) {
  out->clear();
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return !events_.empty() || done_; });
  while (!events_.empty()) {
    out->push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return !out->empty() || !done_;
}

bool Job::next(std::vector<TokenEvent>* out, std::chrono::milliseconds max_wait) {
  out->clear();
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait_for(lk, max_wait, [&] { return !events_.empty() || done_; });
  while (!events_.empty()) {
    out->push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return !out->empty() || !done_;
}

void Job::wait_started() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return !events_.empty() || done_; });
}

void Job::emit(TokenEvent ev) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

void Job::finish(std::string reason, std::string err, int64_t cached) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (done_) return;
    finish_reason = std::move(reason);
    error = std::move(err);
    cached_tokens = cached;
    done_ = true;
  }
  cv_.notify_all();
}

// ---- Slot ------------------------------------------------------------------------------------

struct Scheduler::Slot {
  std::unique_ptr<Session> session;
  std::vector<int32_t> history;  // tokens the session has consumed (size == position)
  std::shared_ptr<Job> job;
  size_t prefill_pos = 0;  // prompt tokens consumed (including reused ones)
  size_t next_snap = 0;    // index into job->params.snapshot_at
  int32_t pending = -1;    // sampled token to feed at the next step
  int64_t cached = 0;
  uint64_t last_used = 0;
  std::unique_ptr<Sampler> sampler;  // the job's chain, with its penalty history
  bool first_token = true;
  // --draft: the job's speculative decoder (null: plain decoding). Its prompt runs in the
  // batched steps like any other (the decoder keeps the trunk rows its depths read); it begins
  // with the first token, and its rounds run in step_speculative().
  std::unique_ptr<SpeculativeDecoder> spec;
};

Scheduler::Scheduler(std::shared_ptr<Engine> engine, SchedulerOptions opts, Metrics* metrics)
    : engine_(std::move(engine)), opts_(opts), metrics_(metrics), cache_(opts.prefix_cache_bytes) {
  for (int i = 0; i < std::max(1, opts_.n_slots); ++i) {
    auto s = std::make_unique<Slot>();
    s->session = engine_->new_session();
    slots_.push_back(std::move(s));
  }
  free_slots_ = int64_t(slots_.size());
  metrics_->slots_total = int64_t(slots_.size());
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  stop();
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return Status::error(std::string(kShutdownError));
    if (int64_t(queue_.size()) >= int64_t(opts_.max_queue) + free_slots_.load())
      return Status::error("[server] queue full: " + std::to_string(queue_.size()) +
                           " requests waiting for " + std::to_string(slots_.size()) + " slots");
    queue_.push_back(std::move(job));
    metrics_->queue_depth = int64_t(queue_.size());
  }
  cv_.notify_all();
  return Status::success();
}

void Scheduler::loop() {
  for (;;) {
    bool active = false;
    for (auto& s : slots_) active |= s->job != nullptr;
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (!active) cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
    }
    step();
  }
  for (auto& s : slots_)
    if (s->job) finish_slot(*s, "error", std::string(kShutdownError));
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& j : queue_) j->finish("error", std::string(kShutdownError));
  queue_.clear();
}

void Scheduler::admit(std::shared_ptr<Job> job) {
  const auto& prompt = job->params.prompt;
  const auto& key = job->params.key.empty() ? prompt : job->params.key;  // see JobParams::key
  if (prompt.empty() || int64_t(prompt.size()) >= opts_.ctx_size) {
    job->finish("error", "[server] prompt of " + std::to_string(prompt.size()) +
                             " tokens does not fit the context of " +
                             std::to_string(opts_.ctx_size));
    return;
  }
  // Best reuse: a free slot whose whole history is a prefix of the prompt (no copy), else the
  // longest cached snapshot. At least one prompt token is always run (it yields the logits).
  Slot* live = nullptr;
  Slot* lru = nullptr;
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (s.job) continue;
    if (!lru || s.last_used < lru->last_used) lru = &s;
    if (!s.history.empty() && s.history.size() < prompt.size() &&
        common_prefix(s.history, key) == s.history.size() &&
        (!live || s.history.size() > live->history.size()))
      live = &s;
  }
  INK_CHECK(lru != nullptr);
  const bool media = !job->params.rows.empty();
  const bool speculate =
      opts_.draft > 0 && !job->params.sampling.logprobs && !media && !job->params.constrained;
  // A speculative job needs its decoder's state as well as the trunk's: a cache entry that has
  // both (a free slot's live state never has the decoder's).
  if (speculate) live = nullptr;
  const size_t live_len = live ? live->history.size() : 0;
  const PrefixCache::Entry* hit = cache_.lookup(key, prompt.size() - 1, ++tick_, speculate);
  Slot* s = live ? live : lru;
  if (hit && hit->tokens.size() > live_len) {
    s = lru;
    s->session->reset();  // the decoder is made on an empty session, then both are restored
    s->history.clear();
  } else {
    hit = nullptr;
    if (!live) {
      s->session->reset();
      s->history.clear();
    }
  }
  if (speculate) {
    auto d = SpeculativeDecoder::create(*s->session, opts_.draft, opts_.draft_vocab);
    if (!d.ok()) {
      job->finish("error", d.status().message());
      return;
    }
    s->spec = std::move(d).value();
  }
  if (hit) {
    s->session->restore(*hit->snap);
    s->history = hit->tokens;
    if (s->spec) {
      if (const Status st = s->spec->restore(*hit->spec); !st.ok()) {
        s->spec.reset();
        s->session->reset();
        s->history.clear();
        job->finish("error", st.message());
        return;
      }
    }
  }
  s->job = std::move(job);
  const JobParams& p = s->job->params;
  s->prefill_pos = s->history.size();
  s->cached = int64_t(s->history.size());
  s->next_snap = 0;
  s->pending = -1;
  s->first_token = true;
  s->sampler = std::make_unique<Sampler>(p.sampling);
  s->sampler->set_prompt(prompt);
  if (!p.forced.empty()) s->sampler->attach(std::make_shared<ScriptConstraint>(p.forced));
  for (const auto& c : p.constraints) s->sampler->attach(c);
  --free_slots_;
  metrics_->slots_active += 1;
  metrics_->cached_tokens += uint64_t(s->cached);
  if (s->cached > 0) metrics_->prefix_cache_hits += 1;
}

void Scheduler::snapshot_to_cache(Slot& s) {
  auto snap = s.session->snapshot();
  // A speculative job's state: its decoder's too (before its first token, or back there after
  // end_turn(), when the decoder's tokens are the history).
  auto spec = s.spec && !s.spec->started() ? s.spec->snapshot() : nullptr;
  // Everything the entry keeps alive: the snapshots' buffers, the token key, the entry itself.
  const size_t bytes = snapshot_bytes(*snap) + (spec ? snapshot_bytes(*spec) : 0) +
                       s.history.size() * sizeof(int32_t) + sizeof(PrefixCache::Entry);
  cache_.insert(s.history, std::move(snap), bytes, ++tick_, std::move(spec));
}

void Scheduler::finish_slot(Slot& s, const std::string& reason, const std::string& error) {
  if (!s.job) return;
  s.job->finish(reason, error, s.cached);
  if (reason == "cancelled") metrics_->requests_cancelled += 1;
  if (s.spec) {
    // A round may have run past the job's end: the decoder rolls the session (and its depths)
    // back to the history, whose end of turn is then cached with the decoder's state as a
    // plain slot's is; the slot keeps the session for a plain request that continues it.
    const bool kept = reason != "error" && s.spec->end_turn(int64_t(s.history.size())).ok();
    if (kept && int64_t(s.history.size()) >= opts_.min_snapshot_tokens &&
        !cache_.contains(s.history, true))
      snapshot_to_cache(s);
    s.spec.reset();
    if (!kept) {
      s.session->reset();
      s.history.clear();
    }
  } else if (reason == "error") {
    s.session->reset();
    s.history.clear();
  } else if (int64_t(s.history.size()) >= opts_.min_snapshot_tokens &&
             !cache_.contains(s.history)) {
    // The state at the end of this turn: the next turn of the conversation starts here.
    snapshot_to_cache(s);
  }
  metrics_->prefix_cache_entries = cache_.size();
  metrics_->prefix_cache_bytes = cache_.bytes();
  s.job.reset();
  s.sampler.reset();
  s.last_used = ++tick_;
  ++free_slots_;
  metrics_->slots_active -= 1;
}

bool Scheduler::step() {
  for (auto& s : slots_)
    if (s->job && s->job->cancelled()) finish_slot(*s, "cancelled");
  {
    std::unique_lock<std::mutex> lk(mu_);
    while (!queue_.empty() && free_slots_ > 0) {
      auto job = std::move(queue_.front());
      queue_.pop_front();
      if (job->cancelled()) {
        job->finish("cancelled");
        metrics_->requests_cancelled += 1;
        continue;
      }
      admit(std::move(job));
    }
    metrics_->queue_depth = int64_t(queue_.size());
  }
  const bool spec_ran = step_speculative();
  // Inputs: decode slots take one token each, prefill slots share the rest of the budget; a
  // prefill chunk ends at the next snapshot boundary so the snapshot lands exactly there.
  std::vector<Session*> sessions;
  std::vector<std::span<const int32_t>> inputs;
  std::vector<std::span<const float* const>> rows;  // tower rows of media prompts
  std::vector<Slot*> used;
  int64_t n_decode = 0, n_prefill = 0;
  for (auto& sp : slots_)
    if (sp->job && !sp->spec && sp->prefill_pos >= sp->job->params.prompt.size()) {
      sessions.push_back(sp->session.get());
      inputs.emplace_back(&sp->pending, 1);
      rows.emplace_back();
      used.push_back(sp.get());
      ++n_decode;
    }
  int64_t budget = std::max<int64_t>(opts_.batch_tokens - n_decode, 1);
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.job || s.prefill_pos >= s.job->params.prompt.size() || budget <= 0) continue;
    const auto& p = s.job->params;
    while (s.next_snap < p.snapshot_at.size() &&
           size_t(p.snapshot_at[s.next_snap]) <= s.prefill_pos)
      ++s.next_snap;
    size_t end = std::min(p.prompt.size(), s.prefill_pos + size_t(budget));
    if (s.next_snap < p.snapshot_at.size()) end = std::min(end, size_t(p.snapshot_at[s.next_snap]));
    sessions.push_back(s.session.get());
    inputs.emplace_back(p.prompt.data() + s.prefill_pos, end - s.prefill_pos);
    if (p.rows.empty())
      rows.emplace_back();
    else
      rows.emplace_back(p.rows.data() + s.prefill_pos, end - s.prefill_pos);
    used.push_back(&s);
    budget -= int64_t(end - s.prefill_pos);
    n_prefill += int64_t(end - s.prefill_pos);
  }
  if (sessions.empty()) return spec_ran;

  const auto t0 = std::chrono::steady_clock::now();
  const Status st = engine_->step(sessions, inputs, rows);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    for (Slot* s : used) finish_slot(*s, "error", st.message());
    return true;
  }
  metrics_->steps += 1;
  Metrics::add(metrics_->step_seconds, dt);
  metrics_->prefill_tokens += uint64_t(n_prefill);
  metrics_->decode_tokens += uint64_t(n_decode);
  auto ema = [&](std::atomic<double>& g, int64_t n) {
    if (n > 0 && dt > 0) g = 0.8 * g.load() + 0.2 * (double(n) / dt);
  };
  ema(metrics_->prefill_tps, n_prefill);
  ema(metrics_->decode_tps, n_decode);

  for (size_t i = 0; i < used.size(); ++i) {
    Slot& s = *used[i];
    const JobParams& p = s.job->params;
    if (s.prefill_pos < p.prompt.size() && !p.key.empty()) {
      const auto first = p.key.begin() + std::ptrdiff_t(s.prefill_pos);
      s.history.insert(s.history.end(), first, first + std::ptrdiff_t(inputs[i].size()));
    } else {
      s.history.insert(s.history.end(), inputs[i].begin(), inputs[i].end());
    }
    if (s.prefill_pos < p.prompt.size()) {
      if (s.spec) {  // the depths over the rows these tokens complete
        if (const Status sp = s.spec->prefilled(inputs[i]); !sp.ok()) {
          finish_slot(s, "error", sp.message());
          continue;
        }
      }
      s.prefill_pos += inputs[i].size();
      const bool at_boundary =
          s.next_snap < p.snapshot_at.size() && size_t(p.snapshot_at[s.next_snap]) == s.prefill_pos;
      if (at_boundary && int64_t(s.prefill_pos) >= opts_.min_snapshot_tokens &&
          !cache_.contains(s.history, s.spec != nullptr))
        snapshot_to_cache(s);
      if (s.prefill_pos < p.prompt.size()) continue;
    }
    TokenEvent ev = s.sampler->next(s.session->last_logits());
    if (s.spec) {  // the first token starts the decoder's rounds (step_speculative() from then on)
      if (const Status sp = s.spec->begin(ev.id); !sp.ok()) {
        finish_slot(s, "error", sp.message());
        continue;
      }
    }
    on_token(s, std::move(ev));
  }
  return true;
}

bool Scheduler::on_token(Slot& s, TokenEvent ev) {
  const JobParams& p = s.job->params;
  {
    const int32_t tok = ev.id;
    s.job->emit(std::move(ev));
    s.job->generated += 1;
    metrics_->completion_tokens += 1;
    if (s.first_token) {
      s.first_token = false;
      metrics_->ttft_count += 1;
      Metrics::add(metrics_->ttft_seconds,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - s.job->t_submit)
                       .count());
    }
    const bool is_stop = std::find(p.stop_ids.begin(), p.stop_ids.end(), tok) != p.stop_ids.end();
    if (is_stop) {
      finish_slot(s, "stop");
    } else if ((p.max_tokens >= 0 && s.job->generated >= p.max_tokens) ||
               int64_t(s.history.size()) + 1 >= opts_.ctx_size ||
               (!p.forced.empty() && !p.ignore_eos && !p.constrained &&
                s.job->generated >= int64_t(p.forced.size()))) {
      finish_slot(s, "length");
    } else {
      s.pending = tok;
      return true;
    }
  }
  return false;
}

bool Scheduler::step_speculative() {
  std::vector<SpeculativeDecoder*> decs;
  std::vector<Sampler*> samplers;
  std::vector<Slot*> in_round;
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.job || !s.spec || !s.spec->started()) continue;
    decs.push_back(s.spec.get());
    samplers.push_back(s.sampler.get());
    in_round.push_back(&s);
  }
  if (decs.empty()) return false;
  std::vector<SpeculativeStats> before;
  for (auto* d : decs) before.push_back(d->stats());
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = SpeculativeDecoder::step_batch(decs, samplers);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    for (Slot* s : in_round) finish_slot(*s, "error", st.message());
    return true;
  }
  metrics_->steps += 1;
  Metrics::add(metrics_->step_seconds, dt);
  int64_t n_tokens = 0;
  for (size_t i = 0; i < in_round.size(); ++i) {
    Slot& s = *in_round[i];
    const SpeculativeStats& now = decs[i]->stats();
    metrics_->spec_rounds += uint64_t(now.rounds - before[i].rounds);
    metrics_->spec_tokens += uint64_t(now.tokens - before[i].tokens);
    for (size_t k = 0; k < now.drafted.size() && k < Metrics::kMaxDraftPositions; ++k) {
      metrics_->spec_drafted[k] += uint64_t(now.drafted[k] - before[i].drafted[k]);
      metrics_->spec_accepted[k] += uint64_t(now.accepted[k] - before[i].accepted[k]);
    }
    // The round's tokens, in order: each consumes the pending one before it (as a plain step).
    const std::vector<int32_t> toks(decs[i]->last_tokens().begin(), decs[i]->last_tokens().end());
    for (int32_t t : toks) {
      s.history.push_back(s.pending);
      ++n_tokens;
      if (!on_token(s, token_event(t))) break;
    }
  }
  metrics_->decode_tokens += uint64_t(n_tokens);
  if (n_tokens > 0 && dt > 0)
    metrics_->decode_tps = 0.8 * metrics_->decode_tps.load() + 0.2 * (double(n_tokens) / dt);
  return true;
}

}  // namespace inkling::server
