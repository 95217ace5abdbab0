// Speculative decoding with the model's own multi-token-prediction (MTP) draft depths
// (spec/inkling-mtp.md). Each round, K depths chained one after the other propose K draft
// tokens; one trunk forward over K+1 rows (the last accepted token + the drafts) verifies them.
// Greedy (temperature 0): the longest prefix of drafts equal to the trunk's argmax is kept plus
// the trunk's token at the first mismatch, so the output is token-identical to plain greedy
// decoding, always: the kernels are row-count invariant up to 16 rows (ops/formats.h), so each
// verify row's logits are bitwise those of a one-row decode step (K <= 15; step_batch too).
// Temperature > 0: standard speculative rejection sampling against the stored draft
// distributions (accept draft x with probability min(1, p(x)/q(x)), else draw from
// max(0, p - q) normalised), so every token is distributed as the trunk's sampler would draw it.
// Rejected rows are rolled back without a replay: the trunk's KV positions are truncated and its
// four conv states per layer restored from the verify pass's saved conv inputs; each depth keeps
// its own KV/conv history over the whole sequence and re-runs its rows that read drafts.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inkling/engine.h"
#include "inkling/sampler.h"
#include "inkling/status.h"

namespace inkling {

struct SpeculativeStats {
  int64_t rounds = 0;             // verify passes
  int64_t tokens = 0;             // tokens the rounds produced (accepted drafts + one per round)
  std::vector<int64_t> drafted;   // [K]: rounds that proposed a draft at position i
  std::vector<int64_t> accepted;  // [K]: rounds whose draft at position i was accepted
  double draft_seconds = 0;       // wall time in the depths (their rows, heads and draws)
  double verify_seconds = 0;      // wall time in the trunk's verify passes
  double accept_seconds = 0;      // acceptance (sampler chain per row) and rollback
  double tokens_per_round() const { return rounds ? double(tokens) / double(rounds) : 0.0; }
  // Fraction of the drafts at position i that were accepted (all earlier ones were).
  double acceptance(size_t i) const {
    return i < drafted.size() && drafted[i] ? double(accepted[i]) / double(drafted[i]) : 0.0;
  }
};

class SpeculativeSnapshot;
// Bytes a decoder snapshot holds (what a cache of them counts).
size_t snapshot_bytes(const SpeculativeSnapshot& snap);
// Where two decoder snapshots' states differ, "" where they are the same state: the committed
// tokens, each depth's committed rows, their KV rows and conv states, and the hidden rows both
// still hold for the depths to read. For tests and diagnostics.
std::string snapshot_difference(const SpeculativeSnapshot& a, const SpeculativeSnapshot& b);

class SpeculativeDecoder {
 public:
  // `session` must be empty (position 0) and outlive the decoder, which drives its trunk from
  // then on. `n_draft` = K, drafts per round: 1 <= K <= engine.info().mtp_depths, and K + 1 at
  // most the engine's prefill chunk. `draft_vocab` > 0 limits the depths' head to token ids
  // [0, draft_vocab) (the first rows of the unembedding: with a BPE vocabulary, the earliest and
  // most frequent merges), which cuts the unembedding a draft reads on large vocabularies;
  // verification stays exact (drafts outside it are simply never proposed). 0 = every id.
  // Errors name what is wrong (no MTP tensors, K too large, draft_vocab out of range).
  static Result<std::unique_ptr<SpeculativeDecoder>> create(Session& session, int n_draft,
                                                            int64_t draft_vocab = 0);
  ~SpeculativeDecoder();

  // Runs the prompt through the trunk and the K depths and returns the first generated token,
  // drawn by sampler.next() from the trunk's logits. The sampler must have seen set_prompt();
  // it is told every token the decoder produces (as next() would).
  Result<int32_t> start(std::span<const int32_t> prompt, Sampler& sampler);
  // The prompt run from outside instead (a server batching many sessions): until begin(), every
  // Engine::step over the session also keeps the trunk's hidden rows for the depths, and
  // prefilled() commits the tokens that step ran there (in order, all of them) and runs each
  // depth over the rows those tokens complete. Then begin() with the first generated token
  // (drawn by the caller from the session's logits, which the sampler must have been told)
  // starts the rounds. Errors: called after begin(), or the session ran tokens some other way.
  Status prefilled(std::span<const int32_t> tokens);
  Status begin(int32_t first);
  bool started() const;
  // Before begin(): the decoder's state (committed tokens, the depths' caches and the rows they
  // still read) as a snapshot. With the session's own snapshot at the same position it resumes
  // a later request that shares the prefix: restore() into a new decoder (same K and draft
  // vocabulary) after Session::restore(). Errors name the mismatch.
  std::shared_ptr<const SpeculativeSnapshot> snapshot() const;
  Status restore(const SpeculativeSnapshot& snap);
  // Where a turn ended: back to the state before begin() with the first `tokens` committed
  // tokens (the session then holds exactly those), so snapshot() can keep the end of the turn
  // for the conversation's next request and prefilled() goes on with more prompt. A round may
  // have run past the end of the turn (a stop token among its accepted drafts): the trunk and
  // the depths are rolled back within the last round, as rejected drafts are, so `tokens` runs
  // from one past the tokens committed before the last round to all of them (the pending token
  // is not consumed, as after plain decoding). Before begin(): `tokens` must be what the
  // session holds (nothing to do). Errors name the range.
  Status end_turn(int64_t tokens);

  // One round: drafts, one verify pass, acceptance. Returns the tokens it produced (1 to K+1,
  // valid until the next call); the last one is the trunk's own. Near the context limit a round
  // drafts fewer tokens; at the limit it fails like Session::decode.
  Result<std::span<const int32_t>> step(Sampler& sampler);

  // One round of every decoder at once (continuous batching): each drafts with its own depths and
  // sampler, then ONE trunk pass verifies all their rows together, then each accepts. The
  // decoders must share an engine and use distinct sessions. Each decoder's tokens are then in
  // last_tokens(). On an error (a decoder at its context limit) no decoder produces tokens and
  // all stay usable (drafts already made are re-made by the next round).
  static Status step_batch(std::span<SpeculativeDecoder* const> decoders,
                           std::span<Sampler* const> samplers);
  // The tokens of the last round (step() or step_batch()).
  std::span<const int32_t> last_tokens() const;

  int n_draft() const;
  const SpeculativeStats& stats() const;

  struct Impl;

 private:
  explicit SpeculativeDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inkling
