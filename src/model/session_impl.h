// Session::Impl: what one sequence holds (model, caches, scratch, last logits). Shared by
// engine.cpp and the speculative decoder (speculative.cpp), which drives a session's trunk.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "inkling/engine.h"
#include "model/model.h"

namespace inkling {

struct Session::Impl {
  std::shared_ptr<const Engine> engine;
  const Model* model = nullptr;
  ThreadPool* pool = nullptr;
  SequenceState state;
  Scratch scratch;
  std::vector<float> logits;  // [unpadded_vocab] of the last position
  int64_t max_context = 0;
  ActivationObserver* observer = nullptr;
  KvType kv = KvType::kF32;
  // Set by a speculative decoder that has not started: Engine::step appends the trunk's normed
  // hidden rows of every token it runs here (the depths read them). Null: none kept.
  std::vector<float>* hidden_sink = nullptr;
};

// Input checks of every call that feeds tokens: not empty, within max_context (0 = no limit)
// after `pos` cached tokens, every id inside the vocabulary. One error naming what is wrong.
Status check_tokens(const ModelConfig& c, std::span<const int32_t> tokens, int64_t pos,
                    int64_t max_context);

}  // namespace inkling
