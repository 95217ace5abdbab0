// bench_draft(): plain vs speculative greedy decoding, and the verify pass's cost, in one run.
#include "bench_draft.h"

#include <algorithm>
#include <chrono>

#include "inkling/sampler.h"
#include "inkling/speculative.h"
#include "speculative_json.h"

namespace inkling::cli {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds of the median of `reps` forwards of `n` tokens from the session's state (restored).
Result<double> forward_seconds(Session& s, const std::vector<int32_t>& toks, int reps) {
  auto snap = s.snapshot();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    s.restore(*snap);
    const double t0 = now();
    auto out = s.prefill(toks);
    t.push_back(now() - t0);
    if (!out.ok()) return out.status();
  }
  s.restore(*snap);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

Result<nlohmann::json> bench_draft(Engine& engine, const std::vector<int32_t>& prompt, int64_t gen,
                                   int max_k, int64_t draft_vocab) {
  SamplingParams greedy;
  greedy.temperature = 0;
  // Plain greedy generation (the tokens fed back, as generate does).
  std::vector<int32_t> plain_ids;
  double plain_s = 0;
  {
    auto s = engine.new_session();
    auto r = s->prefill(prompt);
    if (!r.ok()) return r.status();
    std::span<const float> logits = r.value();
    const double t0 = now();
    for (int64_t i = 0; i < gen; ++i) {
      plain_ids.push_back(argmax(logits));
      if (i + 1 == gen) break;
      auto d = s->decode(plain_ids.back());
      if (!d.ok()) return d.status();
      logits = d.value();
    }
    plain_s = now() - t0;
  }
  const double plain_tok_s = double(gen - 1) / plain_s;
  // One decode step and verify passes of K+1 rows at the prompt's context.
  auto probe = engine.new_session();
  if (auto r = probe->prefill(prompt); !r.ok()) return r.status();
  std::vector<int32_t> rows(size_t(max_k + 1));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = prompt[i % prompt.size()];
  INK_ASSIGN_OR_RETURN(double step_s, forward_seconds(*probe, {rows[0]}, 9));

  nlohmann::json runs = nlohmann::json::array();
  for (int k = 1; k <= max_k; ++k) {
    INK_ASSIGN_OR_RETURN(
        double verify_s,
        forward_seconds(*probe, std::vector<int32_t>(rows.begin(), rows.begin() + k + 1), 9));
    nlohmann::json j = {{"draft", k}, {"verify_cost_vs_decode", verify_s / step_s}};
    if (k > engine.info().mtp_depths) {  // no depth to draft with: the verify cost alone
      runs.push_back(j);
      continue;
    }
    auto s = engine.new_session();
    INK_ASSIGN_OR_RETURN(auto dec, SpeculativeDecoder::create(*s, k, draft_vocab));
    Sampler sampler(greedy);
    sampler.set_prompt(prompt);
    INK_ASSIGN_OR_RETURN(int32_t first, dec->start(prompt, sampler));
    std::vector<int32_t> ids{first};
    const double t0 = now();
    while (int64_t(ids.size()) < gen) {
      INK_ASSIGN_OR_RETURN(auto toks, dec->step(sampler));
      ids.insert(ids.end(), toks.begin(), toks.end());
    }
    const double spec_s = now() - t0;
    ids.resize(size_t(gen));
    // Tokens after the first, as the plain figure counts them.
    const double tok_s = double(gen - 1) / spec_s;
    j.update(speculative_json(dec->stats()));
    j["decode_tok_s"] = tok_s;
    j["speedup"] = tok_s / plain_tok_s;
    j["same_ids"] = ids == plain_ids;
    runs.push_back(j);
  }
  nlohmann::json out = {{"plain_decode_tok_s", plain_tok_s}, {"decode_step_ms", step_s * 1e3},
                        {"context", prompt.size()},          {"gen_tokens", gen},
                        {"draft_vocab", draft_vocab},        {"runs", runs}};
  return out;
}

}  // namespace inkling::cli
