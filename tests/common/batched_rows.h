// Batched decoding against decoding alone, for tests: n sessions (prompts of 1.. prompt.size()
// tokens) step one token each through Engine::step for `rounds` rounds, and each session's logits
// must be bitwise those a twin session gets from Session::decode (row-count invariance).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "inkling/engine.h"

namespace inkling::testing {

inline void expect_batched_rows_bitwise_alone(Engine& e, const std::vector<int32_t>& prompt,
                                              size_t n, int rounds) {
  const size_t V = size_t(e.info().unpadded_vocab);
  std::vector<std::unique_ptr<Session>> batch, alone;
  std::vector<int32_t> tok(n);
  for (size_t i = 0; i < n; ++i) {
    const std::vector<int32_t> p(prompt.begin(), prompt.begin() + 1 + i % prompt.size());
    batch.push_back(e.new_session());
    alone.push_back(e.new_session());
    ASSERT_TRUE(batch.back()->prefill(p).ok());
    ASSERT_TRUE(alone.back()->prefill(p).ok());
    tok[i] = prompt[(i * 7) % prompt.size()];
  }
  for (int round = 0; round < rounds; ++round) {
    std::vector<Session*> ss;
    std::vector<std::span<const int32_t>> in;
    for (size_t i = 0; i < n; ++i) ss.push_back(batch[i].get()), in.emplace_back(&tok[i], 1);
    ASSERT_TRUE(e.step(ss, in).ok());
    for (size_t i = 0; i < n; ++i) {
      auto l = alone[i]->decode(tok[i]);
      ASSERT_TRUE(l.ok());
      const auto got = batch[i]->last_logits();
      ASSERT_EQ(got.size(), V);
      EXPECT_EQ(std::memcmp(got.data(), l->data(), V * 4), 0)
          << "session " << i << " round " << round;
    }
  }
}

}  // namespace inkling::testing
