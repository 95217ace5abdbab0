// Greedy speculative generation for tests: `n` tokens after `prompt` through SpeculativeDecoder
// with `k` drafts (and an optional draft vocabulary), failures reported as test failures.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "inkling/engine.h"
#include "inkling/speculative.h"

namespace inkling::testing {

inline std::vector<int32_t> spec_greedy(Engine& e, const std::vector<int32_t>& prompt, size_t n,
                                        int k, SpeculativeStats* stats = nullptr,
                                        int64_t draft_vocab = 0) {
  auto session = e.new_session();
  auto dec = SpeculativeDecoder::create(*session, k, draft_vocab);
  EXPECT_TRUE(dec.ok()) << dec.status().message();
  if (!dec.ok()) return {};
  SamplingParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  sampler.set_prompt(prompt);
  auto first = dec.value()->start(prompt, sampler);
  EXPECT_TRUE(first.ok()) << first.status().message();
  std::vector<int32_t> out{first.value()};
  while (out.size() < n) {
    auto toks = dec.value()->step(sampler);
    EXPECT_TRUE(toks.ok()) << toks.status().message();
    if (!toks.ok()) break;
    out.insert(out.end(), toks->begin(), toks->end());
  }
  out.resize(n);
  if (stats) *stats = dec.value()->stats();
  return out;
}

}  // namespace inkling::testing
