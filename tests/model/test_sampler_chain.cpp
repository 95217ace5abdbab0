// The sampler chain (sampler.h): each stage on small hand-made logits, the constraint hook, the
// logprobs against a log-softmax computed here, determinism, and two equivalence checks: the
// draw reproduces tokens recorded from the Sampler before the chain existed, and the chain
// reproduces, bit for bit, the server's own bias / penalty / logprobs code it replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "inkling/sampler.h"

namespace inkling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Logits from a splitmix64 stream: multiples of 1/1000 in [-8, 8], the same on every platform
// (unlike std::normal_distribution), so recorded tokens stay valid.
std::vector<float> hashed_logits(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x2545F4914F6CDD1Dull + 1;
  for (auto& f : v) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    f = float(int64_t(z % 16001) - 8000) / 1000.f;
  }
  return v;
}

std::vector<float> processed(Sampler& s, const std::vector<float>& logits) {
  s.next(logits);
  const auto w = s.processed_logits();
  return std::vector<float>(w.begin(), w.end());
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.f;
  return p;
}

// ---- stages 1-3 -------------------------------------------------------------------------------

TEST(SamplerChain, LogitBiasAddsInOrderAndSkipsIdsOutside) {
  SamplingParams p = greedy();
  p.logit_bias = {{1, 2.5f}, {3, -1.f}, {1, 0.5f}, {99, 5.f}, {-1, 5.f}};
  Sampler s(p);
  EXPECT_EQ(processed(s, {0.f, 1.f, 2.f, 3.f}), (std::vector<float>{0.f, 4.f, 2.f, 2.f}));
  // The bias moves the greedy choice: 1 is now the largest.
  EXPECT_EQ(Sampler(p).next(std::vector<float>{0.f, 1.f, 2.f, 3.f}).id, 1);
}

TEST(SamplerChain, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  SamplingParams p = greedy();
  p.repetition_penalty = 2.f;
  Sampler s(p);
  const std::vector<int32_t> prompt = {0, 1, 2, 2, 77};  // 77: outside the logits, ignored
  s.set_prompt(prompt);
  const std::vector<float> l = {2.f, -2.f, 0.f, 1.f, -1.f};
  EXPECT_EQ(processed(s, l), (std::vector<float>{1.f, -4.f, 0.f, 1.f, -1.f}));
  // The token chosen (0, the lowest id of the two 1.0s) is history already; penalised once only.
  EXPECT_EQ(processed(s, l), (std::vector<float>{1.f, -4.f, 0.f, 1.f, -1.f}));
  s.accept(3);
  s.accept(4);
  EXPECT_EQ(processed(s, l), (std::vector<float>{1.f, -4.f, 0.f, 0.5f, -2.f}));
  // A new prompt replaces the history.
  s.set_prompt(std::vector<int32_t>{1});
  EXPECT_EQ(processed(s, l), (std::vector<float>{2.f, -4.f, 0.f, 1.f, -1.f}));
}

TEST(SamplerChain, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplingParams p = greedy();
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  s.set_prompt(std::vector<int32_t>{4, 4, 4});  // the prompt does not count
  s.accept(2);
  s.accept(2);
  s.accept(3);
  const std::vector<float> l = {0.f, 0.f, 3.f, 3.f, 3.f};
  // 2: 3 - (2 x 0.25 + 0.5) = 2; 3: 3 - (0.25 + 0.5) = 2.25; 4 untouched.
  EXPECT_EQ(processed(s, l), (std::vector<float>{0.f, 0.f, 2.f, 2.25f, 3.f}));
  // That step chose 4 (greedy); it now counts once.
  EXPECT_EQ(processed(s, l), (std::vector<float>{0.f, 0.f, 2.f, 2.25f, 2.25f}));
  // set_prompt starts a new sequence: the counts are gone.
  s.set_prompt(std::vector<int32_t>{});
  EXPECT_EQ(processed(s, l), l);
}

TEST(SamplerChain, StagesRunBiasThenRepetitionThenPresence) {
  SamplingParams p = greedy();
  p.logit_bias = {{0, 3.f}};
  p.repetition_penalty = 2.f;
  p.presence_penalty = 1.f;
  Sampler s(p);
  s.set_prompt(std::vector<int32_t>{});
  s.accept(0);
  // (1 + 3) / 2 - 1 = 1; the penalty before the bias would give 1 / 2 + 3 - 1 = 2.5.
  EXPECT_EQ(processed(s, {1.f, 0.f})[0], 1.f);
}

TEST(SamplerChain, DefaultsLeaveTheLogitsAlone) {
  Sampler s(SamplingParams{});
  s.set_prompt(std::vector<int32_t>{0, 1});
  const auto l = hashed_logits(64, 3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(processed(s, l), l);
}

// ---- stage 4: constraints ---------------------------------------------------------------------

// Allows only `allowed` (the rest -inf); records what it is told.
class AllowOnly : public TokenConstraint {
 public:
  explicit AllowOnly(std::set<int32_t> allowed) : allowed_(std::move(allowed)) {}
  std::optional<int32_t> apply(std::span<float> logits) override {
    ++applied;
    for (size_t i = 0; i < logits.size(); ++i)
      if (!allowed_.count(int32_t(i))) logits[i] = -kInf;
    return std::nullopt;
  }
  void accept(int32_t id) override { accepted.push_back(id); }
  int applied = 0;
  std::vector<int32_t> accepted;

 private:
  std::set<int32_t> allowed_;
};

// Forces the given tokens one per step, then lets the draw choose.
class ForceSeq : public TokenConstraint {
 public:
  explicit ForceSeq(std::vector<int32_t> ids) : ids_(std::move(ids)) {}
  std::optional<int32_t> apply(std::span<float>) override {
    if (pos_ < ids_.size()) return ids_[pos_];
    return std::nullopt;
  }
  void accept(int32_t) override { ++pos_; }

 private:
  std::vector<int32_t> ids_;
  size_t pos_ = 0;
};

TEST(SamplerChain, ConstraintMaskWinsEvenWhenGreedy) {
  Sampler s(greedy());
  auto c = std::make_shared<AllowOnly>(std::set<int32_t>{1, 3});
  s.attach(c);
  const std::vector<float> l = {9.f, 1.f, 8.f, 2.f};
  EXPECT_EQ(s.next(l).id, 3);
  EXPECT_EQ(s.processed_logits()[0], -kInf);
  EXPECT_EQ(s.processed_logits()[3], 2.f);
  EXPECT_EQ(c->accepted, std::vector<int32_t>{3});
}

TEST(SamplerChain, ConstraintMaskHoldsAtAnyTemperature) {
  SamplingParams p;
  p.temperature = 1.5f;
  p.seed = 11;
  Sampler s(p);
  s.attach(std::make_shared<AllowOnly>(std::set<int32_t>{5, 17, 40}));
  std::vector<float> l(64, 5.f);  // the allowed tokens are the least likely, equally
  for (int32_t i : {5, 17, 40}) l[size_t(i)] = 0.f;
  std::set<int32_t> got;
  for (int i = 0; i < 300; ++i) got.insert(s.next(l).id);
  EXPECT_EQ(got, (std::set<int32_t>{5, 17, 40}));
}

TEST(SamplerChain, ForcedTokenSkipsTheDrawAndKeepsTheRandomStream) {
  SamplingParams p;
  p.seed = 5;
  const auto l = hashed_logits(100, 2);
  Sampler plain(p), forced(p);
  forced.attach(std::make_shared<ForceSeq>(std::vector<int32_t>{42, 43}));
  EXPECT_EQ(forced.next(l).id, 42);
  EXPECT_EQ(forced.next(l).id, 43);
  // The forced steps drew nothing: the rest matches a sampler that never saw them.
  for (int i = 0; i < 50; ++i) EXPECT_EQ(forced.next(l).id, plain.next(l).id) << i;
}

TEST(SamplerChain, ConstraintsRunInOrderAndAFirstForceEndsTheStage) {
  Sampler s(greedy());
  auto ban = std::make_shared<AllowOnly>(std::set<int32_t>{0, 1});
  auto force = std::make_shared<ForceSeq>(std::vector<int32_t>{2});
  auto later = std::make_shared<AllowOnly>(std::set<int32_t>{0, 1, 2});
  s.attach(force);
  s.attach(later);
  s.attach(force);  // attached already: ignored
  // Step 1: forced -> `later` is not asked, but every constraint is told the token.
  EXPECT_EQ(s.next(std::vector<float>{1.f, 2.f, 0.f}).id, 2);
  EXPECT_EQ(later->applied, 0);
  EXPECT_EQ(later->accepted, std::vector<int32_t>{2});
  // Step 2: `ban` attached mid-generation runs after the others and sees only what follows.
  s.attach(ban);
  EXPECT_EQ(s.next(std::vector<float>{1.f, 0.f, 5.f}).id, 0);
  EXPECT_EQ(later->applied, 1);
  EXPECT_EQ(ban->accepted, std::vector<int32_t>{0});
  // Detached: no mask, nothing told.
  s.detach(ban.get());
  s.detach(later.get());
  EXPECT_EQ(s.next(std::vector<float>{1.f, 0.f, 5.f}).id, 2);
  EXPECT_EQ(ban->accepted, std::vector<int32_t>{0});
  EXPECT_EQ(later->accepted, (std::vector<int32_t>{2, 0}));
}

TEST(SamplerChain, ConstraintSeesThePenalisedLogits) {
  SamplingParams p = greedy();
  p.logit_bias = {{0, -10.f}};
  struct Spy : TokenConstraint {
    std::vector<float> seen;
    std::optional<int32_t> apply(std::span<float> l) override {
      seen.assign(l.begin(), l.end());
      return std::nullopt;
    }
    void accept(int32_t) override {}
  };
  auto spy = std::make_shared<Spy>();
  Sampler s(p);
  s.attach(spy);
  s.next(std::vector<float>{1.f, 2.f});
  EXPECT_EQ(spy->seen, (std::vector<float>{-9.f, 2.f}));
}

// ---- stage 5: logprobs ------------------------------------------------------------------------

TEST(SamplerChain, LogprobsMatchLogSoftmaxOfTheProcessedLogits) {
  SamplingParams p;
  p.seed = 3;
  p.temperature = 0.7f;  // the logprobs are of the logits before temperature, as OpenAI reports
  p.logprobs = true;
  p.top_logprobs = 5;
  p.logit_bias = {{7, 20.f}};
  Sampler s(p);
  const auto l = hashed_logits(300, 4);
  for (int step = 0; step < 20; ++step) {
    const SampledToken t = s.next(l);
    std::vector<double> w(l.begin(), l.end());
    w[7] += 20.0;
    double mx = -INFINITY, sum = 0;
    for (double x : w) mx = std::max(mx, x);
    for (double x : w) sum += std::exp(x - mx);
    const double lse = mx + std::log(sum);
    EXPECT_NEAR(t.logprob, w[size_t(t.id)] - lse, 1e-5);
    ASSERT_EQ(t.top.size(), 5u);
    std::vector<int32_t> order(w.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return w[size_t(a)] > w[size_t(b)]; });
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(t.top[k].id, order[k]) << k;
      EXPECT_NEAR(t.top[k].logprob, w[size_t(order[k])] - lse, 1e-5);
    }
    EXPECT_EQ(t.top[0].id, 7);  // the bias made it the most likely
  }
}

TEST(SamplerChain, TopLogprobsBreakTiesByLowerId) {
  const std::vector<float> l = {1.f, 3.f, 3.f, 2.f, 3.f, -kInf};
  auto ids = [](const SampledToken& t) {
    std::vector<int32_t> v;
    for (const auto& a : t.top) v.push_back(a.id);
    return v;
  };
  EXPECT_EQ(ids(token_logprobs(l, 0, 2)), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ids(token_logprobs(l, 0, 4)), (std::vector<int32_t>{1, 2, 4, 3}));
  const SampledToken all = token_logprobs(l, 5, 6);
  EXPECT_EQ(ids(all), (std::vector<int32_t>{1, 2, 4, 3, 0, 5}));
  EXPECT_EQ(all.logprob, -kInf);  // a banned token
  EXPECT_EQ(all.top[0].logprob, all.top[1].logprob);
  // Probabilities sum to one.
  double sum = 0;
  for (const auto& a : all.top) sum += std::exp(double(a.logprob));
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_TRUE(token_logprobs(l, 1, 0).top.empty());
}

TEST(SamplerChain, NoLogprobsUnlessAsked) {
  SamplingParams p = greedy();
  p.top_logprobs = 3;  // without logprobs: nothing
  const SampledToken t = Sampler(p).next(std::vector<float>{0.f, 1.f});
  EXPECT_EQ(t.id, 1);
  EXPECT_EQ(t.logprob, 0.f);
  EXPECT_TRUE(t.top.empty());
}

// ---- determinism and equivalence --------------------------------------------------------------

TEST(SamplerChain, SameSeedSameTokensWithEveryStageOn) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.95f;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.4f;
  p.frequency_penalty = 0.2f;
  p.logit_bias = {{3, 1.f}, {9, -2.f}};
  p.logprobs = true;
  p.top_logprobs = 3;
  auto run = [&](uint64_t seed) {
    SamplingParams q = p;
    q.seed = seed;
    Sampler s(q);
    s.set_prompt(std::vector<int32_t>{1, 2, 3});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.next(hashed_logits(200, uint64_t(i % 5))).id);
    return out;
  };
  EXPECT_EQ(run(77), run(77));
  EXPECT_NE(run(77), run(78));
}

// Tokens recorded from the Sampler as it was before the chain (commit 931cef2, same compiler
// flags): seeds 0..199, logits hashed_logits(1000, seed), four draws each. `first` is the first
// twelve tokens, `fnv` an FNV-1a hash of all 800.
struct Recorded {
  float temperature, top_p, min_p;
  int top_k;
  uint64_t fnv;
  std::vector<int32_t> first;
};

TEST(SamplerChain, DefaultChainReproducesThePreviousSamplersTokens) {
  const std::vector<Recorded> recorded = {
      {1.0f,
       1.0f,
       0.0f,
       0,
       0xfdd2f710f20cda26ull,
       {916, 430, 43, 960, 614, 743, 969, 448, 640, 786, 640, 790}},
      {0.7f,
       1.0f,
       0.0f,
       40,
       0x815ad3dea41fc470ull,
       {33, 149, 669, 207, 614, 28, 859, 697, 131, 951, 131, 637}},
      {1.0f,
       0.9f,
       0.0f,
       0,
       0x0704ca3a05ebf203ull,
       {784, 584, 175, 222, 487, 64, 987, 707, 813, 267, 813, 717}},
      {0.8f,
       1.0f,
       0.05f,
       0,
       0xbc57369c9f785b09ull,
       {214, 73, 969, 149, 573, 423, 168, 678, 558, 383, 556, 374}},
      {1.2f,
       0.95f,
       0.02f,
       50,
       0xd621dfdb6ed5f604ull,
       {486, 755, 947, 355, 638, 707, 619, 812, 488, 559, 488, 194}},
      {0.0f,
       1.0f,
       0.0f,
       0,
       0xe7b1d19391cdfe33ull,
       {947, 947, 947, 947, 737, 737, 737, 737, 875, 875, 875, 875}},
  };
  for (const Recorded& r : recorded) {
    SCOPED_TRACE(::testing::Message() << "temperature " << r.temperature << " top_p " << r.top_p
                                      << " min_p " << r.min_p << " top_k " << r.top_k);
    uint64_t h = 1469598103934665603ull;
    std::vector<int32_t> first;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const auto l = hashed_logits(1000, seed);
      SamplingParams p;
      p.temperature = r.temperature, p.top_p = r.top_p, p.min_p = r.min_p, p.top_k = r.top_k;
      p.seed = seed;
      Sampler s(p);
      s.set_prompt(std::vector<int32_t>{1, 2, 3});
      for (int i = 0; i < 4; ++i) {
        const int32_t t = s.next(l).id;
        if (first.size() < 12) first.push_back(t);
        h = (h ^ uint64_t(uint32_t(t))) * 1099511628211ull;
      }
    }
    EXPECT_EQ(first, r.first);
    EXPECT_EQ(h, r.fnv);
  }
}

// The server scheduler's choose() before the chain replaced it (app/server/scheduler.cpp at
// commit 931cef2), minus the test script: bias, penalties, constraint, draw, logprobs.
struct ServerBefore {
  SamplingParams p;  // penalties, bias and logprobs read from here
  Sampler sampler;
  std::unordered_map<int32_t, int> counts;
  std::unordered_set<int32_t> seen;
  std::vector<float> work;
  std::shared_ptr<TokenConstraint> constraint;

  ServerBefore(const SamplingParams& params, const std::vector<int32_t>& prompt)
      : p(params), sampler(params) {
    if (p.repetition_penalty != 1.0f) seen.insert(prompt.begin(), prompt.end());
  }
  SampledToken choose(std::span<const float> logits) {
    SampledToken ev;
    work.assign(logits.begin(), logits.end());
    std::span<float> w(work);
    for (auto [id, bias] : p.logit_bias)
      if (id >= 0 && size_t(id) < w.size()) w[size_t(id)] += bias;
    if (p.repetition_penalty != 1.0f)
      for (int32_t id : seen) {
        float& x = w[size_t(id)];
        x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
      }
    if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f)
      for (auto [id, n] : counts)
        w[size_t(id)] -= p.frequency_penalty * float(n) + p.presence_penalty;
    std::optional<int32_t> forced;
    if (constraint) forced = constraint->apply(w);
    const int32_t tok = forced ? *forced : sampler.sample(w);
    ev.id = tok;
    if (p.logprobs) {
      float mx = -std::numeric_limits<float>::infinity();
      for (float x : w) mx = std::max(mx, x);
      double sum = 0;
      for (float x : w) sum += std::exp(double(x - mx));
      const float lse = mx + float(std::log(sum));
      ev.logprob = w[size_t(tok)] - lse;
      if (p.top_logprobs > 0) {
        std::vector<std::pair<float, int32_t>> top;
        top.reserve(size_t(p.top_logprobs) + 1);
        for (size_t i = 0; i < w.size(); ++i) {
          if (top.size() == size_t(p.top_logprobs) && w[i] <= top.back().first) continue;
          auto pos = std::find_if(top.begin(), top.end(), [&](auto& e) { return w[i] > e.first; });
          top.insert(pos, {w[i], int32_t(i)});
          if (top.size() > size_t(p.top_logprobs)) top.pop_back();
        }
        for (auto [x, id] : top) ev.top.push_back({id, x - lse});
      }
    }
    if (constraint) constraint->accept(tok);
    ++counts[tok];
    if (p.repetition_penalty != 1.0f) seen.insert(tok);
    return ev;
  }
};

TEST(SamplerChain, ChainReproducesTheServersPreviousCodeBitForBit) {
  struct Case {
    float temperature, top_p, rep, presence, frequency;
    int top_k, top_logprobs;
    bool logprobs, constrained;
  };
  const std::vector<Case> cases = {
      {1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0, 0, false, false},
      {0.8f, 0.95f, 1.1f, 0.0f, 0.0f, 0, 0, true, false},
      {1.0f, 1.0f, 1.0f, 0.5f, 0.25f, 40, 5, true, false},
      {0.0f, 1.0f, 1.3f, 0.3f, 0.6f, 0, 20, true, false},
      {1.3f, 0.9f, 0.8f, -0.5f, 1.0f, 0, 3, true, true},
      {0.7f, 1.0f, 1.2f, 2.0f, -2.0f, 10, 1, true, true},
  };
  const std::vector<int32_t> prompt = {3, 17, 17, 99, 250, 3, 4};
  int compared = 0;
  for (const Case& c : cases)
    for (uint64_t seed = 0; seed < 25; ++seed) {
      SamplingParams p;
      p.temperature = c.temperature, p.top_p = c.top_p, p.top_k = c.top_k, p.seed = seed;
      p.repetition_penalty = c.rep, p.presence_penalty = c.presence;
      p.frequency_penalty = c.frequency;
      p.logprobs = c.logprobs, p.top_logprobs = c.top_logprobs;
      p.logit_bias = {{5, 2.5f}, {17, -1.25f}, {5, 0.75f}, {1000, 3.f}};
      ServerBefore before(p, prompt);
      Sampler chain(p);
      chain.set_prompt(prompt);
      if (c.constrained) {
        std::set<int32_t> allowed;
        for (int32_t i = 0; i < 300; i += 3) allowed.insert(i);
        before.constraint = std::make_shared<AllowOnly>(allowed);
        chain.attach(std::make_shared<AllowOnly>(allowed));
      }
      for (int step = 0; step < 30; ++step) {
        // Few distinct logit rows, so tokens repeat and the penalties bite.
        const auto l = hashed_logits(300, seed * 7 + uint64_t(step % 3));
        const SampledToken want = before.choose(l), got = chain.next(l);
        ASSERT_EQ(got.id, want.id) << "seed " << seed << " step " << step;
        ASSERT_EQ(got.logprob, want.logprob) << "seed " << seed << " step " << step;
        ASSERT_EQ(got.top.size(), want.top.size());
        for (size_t k = 0; k < want.top.size(); ++k) {
          ASSERT_EQ(got.top[k].id, want.top[k].id);
          ASSERT_EQ(got.top[k].logprob, want.top[k].logprob);
        }
        ++compared;
      }
    }
  EXPECT_EQ(compared, 6 * 25 * 30);
}

}  // namespace
}  // namespace inkling
