// Speculative decoding with the MTP depths (include/inkling/speculative.h): greedy speculative
// generation is token-identical to the engine's own plain greedy decoding (random 3-depth fixture
// and the demo model, every K, chunked prompts); at temperature > 0 the token after a forced one
// is distributed as the trunk's softmax (chi-square over many seeds, fixed so it is
// deterministic); bad draft counts and models without MTP fail with one clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "../common/batched_rows.h"
#include "../common/fixtures.h"
#include "../common/sanitizers.h"
#include "../common/speculative_run.h"
#include "inkling/speculative.h"
#include "model/mtp.h"

namespace inkling {
namespace {

using testing::json_ids;
using testing::read_json;

const std::string kMulti = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/mtp/multi";
const std::string kDemo = std::string(INKLING_SOURCE_DIR) + "/models/inkling-demo";

std::vector<int32_t> plain_greedy(Engine& e, const std::vector<int32_t>& prompt, size_t n) {
  return testing::greedy_ids(e, prompt, n);
}

using testing::spec_greedy;

void print_stats(const char* what, int k, const SpeculativeStats& st) {
  std::printf("[spec] %s K=%d: %.2f tokens/round, acceptance", what, k, st.tokens_per_round());
  for (size_t i = 0; i < st.drafted.size(); ++i) std::printf(" %.2f", st.acceptance(i));
  std::printf("\n");
}

TEST(Speculative, GreedyIdenticalToPlainOnRandomThreeDepths) {
  const auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
  for (int64_t chunk : {int64_t(256), int64_t(5)}) {
    auto e = Engine::load(kMulti, EngineOptions{2, chunk});
    ASSERT_TRUE(e.ok()) << e.status().message();
    const auto want = plain_greedy(*e.value(), prompt, 80);
    for (int k = 1; k <= 3; ++k) {
      SpeculativeStats st;
      EXPECT_EQ(spec_greedy(*e.value(), prompt, 80, k, &st), want)
          << "K=" << k << " chunk " << chunk;
      print_stats("multi", k, st);
    }
    // A draft vocabulary of the first 100 ids: fewer drafts can match, the output is the same.
    EXPECT_EQ(spec_greedy(*e.value(), prompt, 80, 2, nullptr, 100), want) << "draft vocab";
    // A one-token prompt: the deeper depths start with no committed row.
    const std::vector<int32_t> one{prompt[0]};
    const auto want1 = plain_greedy(*e.value(), one, 40);
    for (int k = 1; k <= 3; ++k) EXPECT_EQ(spec_greedy(*e.value(), one, 40, k), want1) << k;
  }
}

TEST(Speculative, GreedyIdenticalToPlainOnDemoModel) {
  if (!std::filesystem::exists(kDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  auto e = Engine::load(kDemo, EngineOptions{2, 256});
  ASSERT_TRUE(e.ok()) << e.status().message();
  const std::string ref = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo/";
  for (const auto& prompt : {json_ids(read_json(ref + "greedy.json"), "prompt_ids"),
                             json_ids(read_json(ref + "prompt.json"), "prompt_ids")}) {
    const auto want = plain_greedy(*e.value(), prompt, 96);
    for (int k = 1; k <= 2; ++k) {
      SpeculativeStats st;
      EXPECT_EQ(spec_greedy(*e.value(), prompt, 96, k, &st), want) << "K=" << k;
      print_stats("demo", k, st);
      EXPECT_GT(st.acceptance(0), 0.0);  // trained depths: drafts are accepted
    }
    SpeculativeStats st;
    EXPECT_EQ(spec_greedy(*e.value(), prompt, 96, 2, &st, 1000), want) << "draft vocab 1000";
    print_stats("demo, draft vocab 1000", 2, st);
  }
}

// Near the context limit a round drafts fewer tokens (down to a plain step); at the limit it
// fails like Session::decode, and every token before is still plain greedy's.
TEST(Speculative, ContextLimitShrinksTheDrafts) {
  const auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
  EngineOptions o{1, 64};
  o.max_context = int64_t(prompt.size()) + 10;
  auto e = Engine::load(kMulti, o);
  ASSERT_TRUE(e.ok());
  // Plain decoding can consume 10 more tokens, so it produces 11.
  const auto want = plain_greedy(*e.value(), prompt, 11);
  ASSERT_EQ(want.size(), 11u);
  auto s = e.value()->new_session();
  auto dec = SpeculativeDecoder::create(*s, 3);
  ASSERT_TRUE(dec.ok());
  SamplingParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  sampler.set_prompt(prompt);
  auto first = dec.value()->start(prompt, sampler);
  ASSERT_TRUE(first.ok());
  std::vector<int32_t> got{first.value()};
  for (;;) {
    auto toks = dec.value()->step(sampler);
    if (!toks.ok()) {
      EXPECT_NE(toks.status().message().find("context length exceeded"), std::string::npos)
          << toks.status().message();
      break;
    }
    got.insert(got.end(), toks->begin(), toks->end());
    ASSERT_LE(got.size(), 11u);
  }
  EXPECT_EQ(got, want);
}

// The depths' state over a whole generation (committed rows, re-wound draft rows, chained
// hiddens): every round's acceptance per position equals what the teacher-forced depths
// (model/mtp.h, checked against the reference in test_mtp.cpp) predict over the final sequence.
// A draft at position i of a round whose earlier drafts were all accepted read only committed
// tokens, so it must be the teacher-forced argmax of depth i at the round's last trunk row.
TEST(Speculative, DraftsAreTheTeacherForcedDepthsArgmax) {
  if (!std::filesystem::exists(kDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  auto e = Engine::load(kDemo, EngineOptions{2, 16});  // chunk 16: prompts and depths split
  ASSERT_TRUE(e.ok());
  auto m = Model::load(kDemo);
  ASSERT_TRUE(m.ok());
  const auto prompt =
      json_ids(read_json(std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo/prompt.json"),
               "prompt_ids");
  const int K = 2;
  auto s = e.value()->new_session();
  auto dec = SpeculativeDecoder::create(*s, K);
  ASSERT_TRUE(dec.ok());
  SamplingParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  sampler.set_prompt(prompt);
  auto first = dec.value()->start(prompt, sampler);
  ASSERT_TRUE(first.ok());
  std::vector<int32_t> seq = prompt;
  seq.push_back(first.value());
  std::vector<int64_t> starts;  // each round's P (the pending token's position)
  while (seq.size() < prompt.size() + 80) {
    starts.push_back(int64_t(seq.size()) - 1);
    auto toks = dec.value()->step(sampler);
    ASSERT_TRUE(toks.ok());
    seq.insert(seq.end(), toks->begin(), toks->end());
  }
  ThreadPool pool(2);
  const auto tf = mtp_teacher_forced(*m.value(), seq, 256, &pool);
  const int64_t V = m.value()->config.unpadded_vocab;
  std::vector<int64_t> want(K, 0);
  for (int64_t P : starts) {
    bool ok = true;
    for (int i = 0; i < K && ok; ++i) {
      const int64_t R = P - 1, target = P + 1 + i;
      ASSERT_LT(target, int64_t(seq.size()));
      const int32_t draft = argmax(std::span<const float>(tf[size_t(i)].data() + R * V, size_t(V)));
      ok = draft == seq[size_t(target)];
      want[size_t(i)] += ok;
    }
  }
  const SpeculativeStats& st = dec.value()->stats();
  ASSERT_EQ(st.rounds, int64_t(starts.size()));
  std::printf("[spec] demo K=2 over %lld rounds: accepted %lld, %lld (teacher-forced %lld, %lld)\n",
              (long long)st.rounds, (long long)st.accepted[0], (long long)st.accepted[1],
              (long long)want[0], (long long)want[1]);
  EXPECT_EQ(st.accepted[0], want[0]);
  EXPECT_EQ(st.accepted[1], want[1]);
}

// step_batch: three sessions (different prompts and K) verified in one trunk pass per round;
// each still produces exactly its own plain greedy continuation.
TEST(Speculative, BatchedRoundsMatchPlainGreedy) {
  if (!std::filesystem::exists(kDemo + "/model.safetensors")) GTEST_SKIP() << "no demo model";
  auto e = Engine::load(kDemo, EngineOptions{2, 256});
  ASSERT_TRUE(e.ok());
  const std::string ref = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/demo/";
  const auto p1 = json_ids(read_json(ref + "greedy.json"), "prompt_ids");
  const auto p2 = json_ids(read_json(ref + "prompt.json"), "prompt_ids");
  const std::vector<int32_t> p3(p2.begin(), p2.begin() + 5);
  const std::vector<std::vector<int32_t>> prompts = {p1, p2, p3};
  const int ks[] = {2, 1, 2};
  const size_t n = 64;
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<SpeculativeDecoder>> decs;
  std::vector<std::unique_ptr<Sampler>> samplers;
  std::vector<std::vector<int32_t>> got(3);
  SamplingParams sp;
  sp.temperature = 0;
  for (size_t i = 0; i < 3; ++i) {
    sessions.push_back(e.value()->new_session());
    auto d = SpeculativeDecoder::create(*sessions.back(), ks[i]);
    ASSERT_TRUE(d.ok());
    decs.push_back(std::move(d).value());
    samplers.push_back(std::make_unique<Sampler>(sp));
    samplers.back()->set_prompt(prompts[i]);
    auto first = decs.back()->start(prompts[i], *samplers.back());
    ASSERT_TRUE(first.ok());
    got[i].push_back(first.value());
  }
  std::vector<SpeculativeDecoder*> dp;
  std::vector<Sampler*> spp;
  for (size_t i = 0; i < 3; ++i) dp.push_back(decs[i].get()), spp.push_back(samplers[i].get());
  while (got[0].size() < n || got[1].size() < n || got[2].size() < n) {
    ASSERT_TRUE(SpeculativeDecoder::step_batch(dp, spp).ok());
    for (size_t i = 0; i < 3; ++i)
      got[i].insert(got[i].end(), dp[i]->last_tokens().begin(), dp[i]->last_tokens().end());
  }
  for (size_t i = 0; i < 3; ++i) {
    got[i].resize(n);
    EXPECT_EQ(got[i], plain_greedy(*e.value(), prompts[i], n)) << "session " << i;
  }
  // Misuse: the same session twice.
  std::vector<SpeculativeDecoder*> twice = {dp[0], dp[0]};
  std::vector<Sampler*> two = {spp[0], spp[1]};
  EXPECT_FALSE(SpeculativeDecoder::step_batch(twice, two).ok());
}

// The prompt run from outside (Engine::step in pieces, beside another session) and committed
// with prefilled(), or resumed from a pair of snapshots taken part-way: the greedy output is
// plain greedy's, as with start(). Misuse is one error each.
std::vector<int32_t> spec_after(Engine& e, Session& s, SpeculativeDecoder& d,
                                const std::vector<int32_t>& prompt, size_t from, size_t n,
                                std::vector<size_t> pieces, SpeculativeStats* stats) {
  SamplingParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  sampler.set_prompt(prompt);
  auto other = e.new_session();  // batched beside an unrelated prompt
  for (size_t at = from, i = 0; at < prompt.size(); ++i) {
    const size_t len = std::min(pieces[i % pieces.size()], prompt.size() - at);
    const std::span<const int32_t> piece(prompt.data() + at, len);
    std::vector<Session*> ss = {&s, other.get()};
    std::vector<std::span<const int32_t>> in = {piece, std::span<const int32_t>(prompt.data(), 2)};
    EXPECT_TRUE(e.step(ss, in).ok());
    const Status st = d.prefilled(piece);
    EXPECT_TRUE(st.ok()) << st.message();
    at += len;
  }
  const int32_t first = sampler.next(s.last_logits()).id;
  EXPECT_TRUE(d.begin(first).ok());
  EXPECT_TRUE(d.started());
  std::vector<int32_t> out{first};
  while (out.size() < n) {
    auto toks = d.step(sampler);
    EXPECT_TRUE(toks.ok()) << toks.status().message();
    if (!toks.ok()) break;
    out.insert(out.end(), toks->begin(), toks->end());
  }
  out.resize(n);
  *stats = d.stats();
  return out;
}

// Same rounds: same drafts proposed and accepted at every position.
void expect_same_rounds(const SpeculativeStats& a, const SpeculativeStats& b,
                        const std::string& what) {
  EXPECT_EQ(a.rounds, b.rounds) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_EQ(a.accepted, b.accepted) << what;
}

// The random 3-depth fixture and (where present) the demo model, each with its prompt.
std::vector<std::pair<std::string, std::vector<int32_t>>> models_with_prompts() {
  std::vector<std::pair<std::string, std::vector<int32_t>>> out = {
      {kMulti, json_ids(read_json(kMulti + "/ref.json"), "prompt_ids")}};
  if (std::filesystem::exists(kDemo + "/model.safetensors"))
    out.emplace_back(kDemo, json_ids(read_json(std::string(INKLING_SOURCE_DIR) +
                                               "/tests/fixtures/demo/prompt.json"),
                                     "prompt_ids"));
  return out;
}

TEST(Speculative, PrefillFromOutsideAndSnapshotsMatchPlainGreedy) {
  for (const auto& model : models_with_prompts()) {
    const std::string& dir = model.first;
    const std::vector<int32_t>& prompt = model.second;  // (lambdas below capture it)
    ASSERT_GE(prompt.size(), 8u);
    for (int64_t chunk : {int64_t(256), int64_t(5)}) {
      auto e = Engine::load(dir, EngineOptions{2, chunk});
      ASSERT_TRUE(e.ok()) << e.status().message();
      Engine& en = *e.value();
      const size_t n = 48;
      const auto want = plain_greedy(en, prompt, n);
      const int depths = dir == kMulti ? 3 : 2;
      for (int k = 1; k <= depths; ++k) {
        const std::string what =
            dir + " K=" + std::to_string(k) + " chunk " + std::to_string(chunk);
        auto s = en.new_session();
        auto d = SpeculativeDecoder::create(*s, k);
        ASSERT_TRUE(d.ok()) << d.status().message();
        EXPECT_FALSE(d.value()->started());
        SpeculativeStats st0, st1, st2, st3;
        EXPECT_EQ(spec_greedy(en, prompt, n, k, &st0), want) << what;
        EXPECT_EQ(spec_after(en, *s, *d.value(), prompt, 0, n, {3, 1, 7}, &st1), want) << what;
        // The depths read the rows they would have read in start(): the same drafts are made
        // (the kernels are row-count invariant up to 16 rows, the pieces' size here).
        expect_same_rounds(st1, st0, what + " from outside vs start()");
        if (dir == kDemo) {
          EXPECT_GT(st1.acceptance(0), 0.3) << what;
        }

        // Half the prompt, both snapshots; a new session and decoder resume from them.
        const size_t half = prompt.size() / 2;
        auto s1 = en.new_session();
        auto d1 = std::move(SpeculativeDecoder::create(*s1, k)).value();
        const std::vector<int32_t> head(prompt.begin(), prompt.begin() + std::ptrdiff_t(half));
        ASSERT_TRUE(s1->prefill(head).ok());
        // The session ran tokens the decoder did not see (Session::prefill keeps no rows).
        EXPECT_FALSE(d1->prefilled(head).ok()) << what;
        auto s2 = en.new_session();
        auto d2 = std::move(SpeculativeDecoder::create(*s2, k)).value();
        std::vector<Session*> ss = {s2.get()};
        std::vector<std::span<const int32_t>> in = {head};
        ASSERT_TRUE(en.step(ss, in).ok());
        ASSERT_TRUE(d2->prefilled(head).ok());
        const auto snap = s2->snapshot();
        const auto spec = d2->snapshot();
        ASSERT_TRUE(spec);
        EXPECT_GT(snapshot_bytes(*spec), 0u);
        auto s3 = en.new_session();
        auto d3 = std::move(SpeculativeDecoder::create(*s3, k)).value();
        EXPECT_FALSE(d3->restore(*spec).ok()) << "the session is not restored yet";
        s3->restore(*snap);
        ASSERT_TRUE(d3->restore(*spec).ok());
        EXPECT_EQ(spec_after(en, *s3, *d3, prompt, half, n, {4}, &st3), want) << what << " resumed";
        // The snapshot's own decoder goes on the same, round for round.
        EXPECT_EQ(spec_after(en, *s2, *d2, prompt, half, n, {4}, &st2), want)
            << what << " original";
        expect_same_rounds(st3, st2, what + " resumed vs original");
        expect_same_rounds(st3, st0, what + " resumed vs start()");
        // Misuse after the start: prefilled, begin, snapshot, restore.
        EXPECT_FALSE(d2->prefilled(head).ok());
        EXPECT_FALSE(d2->begin(1).ok());
        EXPECT_EQ(d2->snapshot(), nullptr);
        EXPECT_FALSE(d2->restore(*spec).ok());
        if (k < depths) {  // another draft count
          auto s4 = en.new_session();
          auto d4 = std::move(SpeculativeDecoder::create(*s4, k + 1)).value();
          s4->restore(*snap);
          EXPECT_FALSE(d4->restore(*spec).ok());
        }
      }
      // A second decoder on a session whose first has not begun; none once it has gone.
      auto s5 = en.new_session();
      {
        auto d5 = SpeculativeDecoder::create(*s5, 1);
        ASSERT_TRUE(d5.ok());
        EXPECT_FALSE(SpeculativeDecoder::create(*s5, 1).ok());
      }
      EXPECT_TRUE(SpeculativeDecoder::create(*s5, 1).ok());
    }
  }
}

// end_turn(): a conversation's turn ended inside a round (a stop token among its accepted
// drafts). The decoder goes back to before begin() at every token count the last round allows,
// the session holds exactly those tokens, and the next turn (more prompt, from the same decoder
// or from a pair of snapshots taken there) is plain greedy's, round for round a fresh start()'s.
TEST(Speculative, EndTurnInsideARoundResumesTheNextTurn) {
  for (const auto& model : models_with_prompts()) {
    const std::string& dir = model.first;
    const std::vector<int32_t>& prompt = model.second;  // (lambdas below capture it)
    const std::vector<int32_t> extra(prompt.begin(), prompt.begin() + 5);  // the next turn's text
    for (int64_t chunk : {int64_t(256), int64_t(5)}) {
      auto e = Engine::load(dir, EngineOptions{2, chunk});
      ASSERT_TRUE(e.ok()) << e.status().message();
      Engine& en = *e.value();
      const int depths = dir == kMulti ? 3 : 2;
      for (int k = 1; k <= depths; ++k) {
        SamplingParams sp;
        sp.temperature = 0;
        // Rounds until one produced at least two tokens (or 12 rounds): its tokens [lo, hi].
        auto run = [&](Session& s, SpeculativeDecoder& d, std::vector<int32_t>* seq, int64_t* lo,
                       int64_t* hi) {
          Sampler sampler(sp);
          sampler.set_prompt(prompt);
          auto first = d.start(prompt, sampler);
          ASSERT_TRUE(first.ok()) << first.status().message();
          *seq = prompt;
          seq->push_back(first.value());
          for (int r = 0; r < 12; ++r) {
            auto toks = d.step(sampler);
            ASSERT_TRUE(toks.ok()) << toks.status().message();
            seq->insert(seq->end(), toks->begin(), toks->end());
            *hi = int64_t(seq->size()) - 1;  // the last token is pending
            *lo = *hi - int64_t(toks->size()) + 1;
            if (toks->size() >= 2) break;
          }
          EXPECT_EQ(s.position(), *hi);
        };
        std::vector<int32_t> seq;
        int64_t lo = 0, hi = 0;
        {
          auto s = en.new_session();
          auto d = std::move(SpeculativeDecoder::create(*s, k)).value();
          run(*s, *d, &seq, &lo, &hi);
          EXPECT_FALSE(d->end_turn(lo - 1).ok()) << "before the last round";
          EXPECT_FALSE(d->end_turn(hi + 1).ok()) << "past the committed tokens";
          EXPECT_FALSE(d->prefilled(extra).ok()) << "still in its rounds";
        }
        for (int64_t n = lo; n <= hi; ++n) {
          const std::string what = dir + " K=" + std::to_string(k) + " chunk " +
                                   std::to_string(chunk) + " turn of " + std::to_string(n);
          auto s = en.new_session();
          auto d = std::move(SpeculativeDecoder::create(*s, k)).value();
          std::vector<int32_t> seq2;
          int64_t lo2 = 0, hi2 = 0;
          run(*s, *d, &seq2, &lo2, &hi2);
          ASSERT_EQ(seq2, seq) << what;
          const Status st = d->end_turn(n);
          ASSERT_TRUE(st.ok()) << what << ": " << st.message();
          EXPECT_FALSE(d->started());
          EXPECT_EQ(s->position(), n);
          EXPECT_TRUE(d->end_turn(n).ok()) << "again: nothing to do";
          const auto snap = s->snapshot();
          const auto spec = d->snapshot();
          ASSERT_TRUE(spec) << what;
          // The decoder's state is bitwise what running those tokens as a prompt leaves.
          {
            auto s4 = en.new_session();
            auto d4 = std::move(SpeculativeDecoder::create(*s4, k)).value();
            // The prompt in start()'s pieces (more than 16 rows need not give the same bits as
            // fewer), the rest in pieces of 7.
            const int64_t np = int64_t(prompt.size());
            for (int64_t at = 0; at < n;) {
              const int64_t len = std::min(n - at, at < np ? std::min(chunk, np - at) : 7);
              const std::span<const int32_t> piece(seq.data() + at, size_t(len));
              at += len;
              std::vector<Session*> ss = {s4.get()};
              std::vector<std::span<const int32_t>> in = {piece};
              ASSERT_TRUE(en.step(ss, in).ok());
              ASSERT_TRUE(d4->prefilled(piece).ok());
            }
            EXPECT_EQ(snapshot_difference(*d4->snapshot(), *spec), "") << what;
          }
          // The session's state is what plain decoding of those tokens leaves (the verify rows
          // are bitwise decode steps): the same logits, bitwise, after more prompt.
          {
            auto ref_s = en.new_session();
            ASSERT_TRUE(ref_s->prefill(prompt).ok());
            for (int64_t t = int64_t(prompt.size()); t < n; ++t)
              ASSERT_TRUE(ref_s->decode(seq[size_t(t)]).ok());
            auto got_s = en.new_session();
            got_s->restore(*snap);
            auto a = ref_s->prefill(extra);
            auto b = got_s->prefill(extra);
            ASSERT_TRUE(a.ok() && b.ok());
            const std::vector<float> va(a->begin(), a->end()), vb(b->begin(), b->end());
            EXPECT_TRUE(va == vb) << what << ": the trunk's state after end_turn";
          }
          // The next turn: the history so far, then more prompt.
          std::vector<int32_t> next(seq.begin(), seq.begin() + n);
          next.insert(next.end(), extra.begin(), extra.end());
          const size_t m = 24;
          const auto want = plain_greedy(en, next, m);
          SpeculativeStats st0, st1, st2;
          EXPECT_EQ(spec_greedy(en, next, m, k, &st0), want) << what;
          const SpeculativeStats before = d->stats();  // the first turn's rounds
          EXPECT_EQ(spec_after(en, *s, *d, next, size_t(n), m, {3}, &st1), want) << what;
          st1.rounds -= before.rounds;
          st1.tokens -= before.tokens;
          for (size_t i = 0; i < st1.accepted.size(); ++i) st1.accepted[i] -= before.accepted[i];
          expect_same_rounds(st1, st0, what + " continued vs start()");
          auto s2 = en.new_session();
          auto d2 = std::move(SpeculativeDecoder::create(*s2, k)).value();
          s2->restore(*snap);
          ASSERT_TRUE(d2->restore(*spec).ok()) << what;
          EXPECT_EQ(spec_after(en, *s2, *d2, next, size_t(n), m, {2, 5}, &st2), want)
              << what << " restored";
          expect_same_rounds(st2, st0, what + " restored vs start()");
        }
      }
    }
  }
}

// What greedy identity rests on: a verify-style segment of n rows (teacher-forced, after a
// prompt) gives every row bitwise the logits of one decode step per token, for n up to 16 (the
// kernels are row-count invariant: ops/formats.h), on the MTP fixture, the dense and quantized
// fixtures (every MLX width, NVFP4) and the demo model.
TEST(Speculative, VerifyRowsAreBitwiseDecodeSteps) {
  const std::string fx = std::string(INKLING_SOURCE_DIR) + "/tests/fixtures/";
  std::vector<std::string> dirs = {kMulti, fx + "bf16/hf", fx + "full/hf", kDemo};
  for (const char* q : {"quant_mlx4", "quant_mlxvlm", "quant_nvfp4", "quant_mlx2", "quant_mlx3",
                        "quant_mlx5", "quant_mlx6", "quant_mlx8"})
    dirs.push_back(fx + q + "/model");
  int checked = 0;
  for (const std::string& dir : dirs) {
    if (!std::filesystem::exists(dir + "/config.json")) continue;
    auto e = Engine::load(dir, EngineOptions{2, 64});
    ASSERT_TRUE(e.ok()) << dir << ": " << e.status().message();
    ++checked;
    const size_t V = size_t(e.value()->info().unpadded_vocab);
    auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
    for (int32_t& id : prompt) id = int32_t(size_t(id) % V);  // any fixture's vocabulary
    const auto cont = plain_greedy(*e.value(), prompt, 16);
    auto a = e.value()->new_session();
    ASSERT_TRUE(a->prefill(prompt).ok());
    std::vector<float> steps;
    for (size_t i = 0; i < 16; ++i) {
      auto l = a->decode(cont[i]);
      ASSERT_TRUE(l.ok());
      steps.insert(steps.end(), l->begin(), l->end());
    }
    for (size_t n : {2, 3, 5, 9, 16}) {
      auto b = e.value()->new_session();
      ASSERT_TRUE(b->prefill(prompt).ok());
      auto all = b->prefill_all_logits(std::vector<int32_t>(cont.begin(), cont.begin() + n));
      ASSERT_TRUE(all.ok());
      ASSERT_EQ(all->size(), n * V);
      size_t differ = 0;
      for (size_t i = 0; i < n * V; ++i) differ += std::memcmp(&(*all)[i], &steps[i], 4) != 0;
      EXPECT_EQ(differ, 0u) << dir << ": " << n << " rows vs " << n << " decode steps";
    }
  }
  std::printf("[spec] verify rows bitwise equal to decode steps on %d models\n", checked);
  EXPECT_GE(checked, 11);
}

// Batched decode (Engine::step over several sessions, one row each; more sessions than
// kFewMaxTokens) gives each session bitwise the logits of its own decode step.
TEST(Speculative, BatchedStepRowsAreBitwiseDecodeSteps) {
  auto e = Engine::load(kMulti, EngineOptions{2, 64});
  ASSERT_TRUE(e.ok());
  const auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
  // 20 sessions, more than kFewMaxTokens: the batch runs in pieces.
  testing::expect_batched_rows_bitwise_alone(*e.value(), prompt, 20, 3);
}

TEST(Speculative, BadDraftCountsAndModelsWithoutDepths) {
  auto e = Engine::load(kMulti, EngineOptions{1, 256});
  ASSERT_TRUE(e.ok());
  auto s = e.value()->new_session();
  EXPECT_FALSE(SpeculativeDecoder::create(*s, 1, 501).ok());  // beyond the 500 logits
  EXPECT_FALSE(SpeculativeDecoder::create(*s, 1, -1).ok());
  for (int k : {0, 4, -1}) {
    auto d = SpeculativeDecoder::create(*s, k);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("outside [1, 3]"), std::string::npos)
        << d.status().message();
  }
  auto small = Engine::load(kMulti, EngineOptions{1, 2});  // chunk 2 cannot verify 3 rows
  ASSERT_TRUE(small.ok());
  auto ss = small.value()->new_session();
  auto d = SpeculativeDecoder::create(*ss, 2);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("prefill chunk"), std::string::npos);
  auto full = Engine::load(testing::fixture_dir("full") + "/og", EngineOptions{1, 256});
  ASSERT_TRUE(full.ok());
  auto fs = full.value()->new_session();
  d = SpeculativeDecoder::create(*fs, 1);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("model.mtp.layers.0.input_proj.weight"), std::string::npos)
      << d.status().message();
  auto used = e.value()->new_session();
  ASSERT_TRUE(used->prefill(std::vector<int32_t>{1, 2}).ok());
  EXPECT_FALSE(SpeculativeDecoder::create(*used, 1).ok());
}

// Forces one token, then returns nothing: the first token is fixed, the rest is sampled.
class ForceFirst : public TokenConstraint {
 public:
  explicit ForceFirst(int32_t id) : id_(id) {}
  std::optional<int32_t> apply(std::span<float>) override {
    return done_ ? std::nullopt : std::optional<int32_t>(id_);
  }
  void accept(int32_t) override { done_ = true; }

 private:
  int32_t id_;
  bool done_ = false;
};

// Rejection sampling: over many seeds, the token after a forced first token (produced by the
// first round from K = 2 drafts: accepted draft or residual draw) against the trunk's softmax
// at temperature 1. Chi-square at p = 0.001 on bins with >= 5 expected; fixed seeds.
void check_distribution(int64_t draft_vocab, int N) {
  const auto prompt = json_ids(read_json(kMulti + "/ref.json"), "prompt_ids");
  auto e = Engine::load(kMulti, EngineOptions{1, 64});
  ASSERT_TRUE(e.ok());
  const int32_t forced = 7;
  std::vector<int32_t> ctx = prompt;
  ctx.push_back(forced);
  auto ref_session = e.value()->new_session();  // owns the logits the span points into
  auto ref_logits = ref_session->prefill(ctx);
  ASSERT_TRUE(ref_logits.ok());
  const std::vector<float> logits(ref_logits->begin(), ref_logits->end());
  const float temp = 1.5f;
  std::vector<double> p(logits.size());
  double mx = -1e30, sum = 0;
  for (float l : logits) mx = std::max(mx, double(l) / temp);
  for (size_t v = 0; v < p.size(); ++v) sum += p[v] = std::exp(double(logits[v]) / temp - mx);
  for (double& x : p) x /= sum;

  std::map<int32_t, int> counts;
  int64_t accepted0 = 0;
  for (int seed = 0; seed < N; ++seed) {
    auto s = e.value()->new_session();
    auto dec = SpeculativeDecoder::create(*s, 2, draft_vocab);
    ASSERT_TRUE(dec.ok());
    SamplingParams sp;
    sp.temperature = temp;
    sp.seed = uint64_t(seed) * 7919 + 1;
    Sampler sampler(sp);
    sampler.attach(std::make_shared<ForceFirst>(forced));
    sampler.set_prompt(prompt);
    auto first = dec.value()->start(prompt, sampler);
    ASSERT_TRUE(first.ok());
    ASSERT_EQ(first.value(), forced);
    auto toks = dec.value()->step(sampler);
    ASSERT_TRUE(toks.ok());
    counts[(*toks)[0]] += 1;
    accepted0 += dec.value()->stats().accepted[0];
  }
  // Bins: every token expected >= 5 times, the rest pooled.
  double chi2 = 0, rest_e = 0, rest_o = 0;
  int bins = 0;
  for (size_t v = 0; v < p.size(); ++v) {
    const double ex = p[v] * N;
    const double ob = counts.count(int32_t(v)) ? counts[int32_t(v)] : 0;
    if (ex >= 5) {
      chi2 += (ob - ex) * (ob - ex) / ex;
      ++bins;
    } else {
      rest_e += ex, rest_o += ob;
    }
  }
  if (rest_e > 0) chi2 += (rest_o - rest_e) * (rest_o - rest_e) / rest_e, ++bins;
  const double df = bins - 1, z = 3.09;  // p = 0.001, Wilson-Hilferty
  const double crit = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  std::printf(
      "[spec] temperature %.1f: chi2 %.1f over %d bins (critical %.1f at p=0.001), "
      "depth-0 drafts accepted %.2f\n",
      temp, chi2, bins, crit, double(accepted0) / N);
  EXPECT_GE(bins, 5);
  EXPECT_LT(chi2, crit);
  EXPECT_GT(accepted0, 0);  // both paths (accepted draft, residual draw) were taken
  EXPECT_LT(accepted0, N);
}

TEST(Speculative, TemperatureSamplingKeepsTheTrunkDistribution) {
  check_distribution(0, test::samples(3000, 4));
}

// Drafts from the first 250 ids only (q is zero beyond): still the trunk's distribution.
TEST(Speculative, TemperatureSamplingWithADraftVocabulary) {
  check_distribution(250, test::samples(2000, 4));
}

}  // namespace
}  // namespace inkling
