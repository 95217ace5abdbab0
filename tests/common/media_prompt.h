// What the media parity tests check of a merged prompt, for either family: the teacher-forced
// logits of prompt + tower rows against the reference's .npy (within 1e-4 of max |logit|) and the
// greedy continuation with the cache against the reference's ids.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "base/npy.h"
#include "inkling/media.h"

namespace inkling::testing {

// max |got - ref| / max |ref|.
inline float max_rel_diff(std::span<const float> got, std::span<const float> ref) {
  float d = 0, m = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    d = std::max(d, std::fabs(got[i] - ref[i])), m = std::max(m, std::fabs(ref[i]));
  return d / m;
}

// Returns the logits' max_rel_diff (-1 when the prefill or the reference could not be read).
inline float check_media_prompt(const Engine& engine, const std::vector<int32_t>& prompt,
                                const std::vector<MediaEmbedding>& media,
                                const std::string& logits_npy, const std::vector<int32_t>& greedy) {
  auto session = engine.new_session();
  std::vector<float> all;
  auto last = prefill_media(engine, *session, prompt, media, &all);
  EXPECT_TRUE(last.ok()) << last.status().message();
  auto ref = read_npy_f32(logits_npy);
  EXPECT_TRUE(ref.ok()) << logits_npy;
  if (!last.ok() || !ref.ok()) return -1;
  EXPECT_EQ(all.size(), ref->data.size());
  if (all.size() != ref->data.size()) return -1;
  const float d = max_rel_diff(all, ref->data);
  EXPECT_LT(d, 1e-4f);
  std::vector<int32_t> ids;
  std::span<const float> logits = *last;
  for (size_t i = 0; i < greedy.size(); ++i) {
    ids.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    auto next = session->decode(ids.back());
    EXPECT_TRUE(next.ok());
    if (!next.ok()) return d;
    logits = *next;
  }
  EXPECT_EQ(ids, greedy);
  return d;
}

}  // namespace inkling::testing
