// `inkling serve`: the OpenAI-compatible HTTP server (cpp-httplib). HTTP worker threads parse,
// validate, render and tokenize requests, submit token jobs to the single Scheduler that owns the
// engine, and turn the token events they get back into JSON / SSE.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inkling/engine.h"
#include "inkling/status.h"
#include "listener_options.h"

namespace inkling::server {

struct ServerOptions {
  std::string model_dir;
  ListenerOptions net;   // host, port (0 = any free port), connection limits and timeouts
  int parallel = 1;      // slots decoded together
  int64_t ctx_size = 0;  // per slot; 0 = the model's model_max_length (capped at 32768)
  std::string api_key;   // empty = no authentication
  int threads = 0;       // engine threads; 0 = all
  ExpertExecutor* expert_executor = nullptr;  // --expert-parallel (not owned), else null
  KvCacheType kv_type = KvCacheType::kF32;    // KV cache element type (--kv-type)
  Numerics numerics = Numerics::kFast;        // arithmetic of the products (--numerics)
  size_t max_queue = 64;                      // requests waiting beyond the slots before 503
  int64_t batch_tokens = 512;                 // prompt tokens per scheduler step
  size_t prefix_cache_mb = 1024;
  size_t max_body_bytes = size_t(8) << 20;  // decoded (after chunked / gzip / br) request body
  size_t max_body_memory_mb = 256;          // request bodies of all connections together
  std::string alias;        // model id reported by /v1/models; default: the folder name
  std::string test_script;  // TEST ONLY: JSON [{"when": substr, "output": text}] forced outputs
  bool verbose = false;
  int draft = 0;            // speculative decoding with this many MTP drafts per round (0 = off)
  int64_t draft_vocab = 0;  // the drafts' head over ids [0, N) (0 = every id)
  // Image/audio content parts: local paths are read only under this folder (empty = never);
  // decoded images above max_image_pixels and recordings above max_audio_seconds are refused.
  std::string media_dir;
  int64_t max_image_pixels = int64_t(32) << 20;
  double max_audio_seconds = 300;
};

class Server {
 public:
  // Loads the engine, tokenizer and chat template.
  static Result<std::unique_ptr<Server>> create(const ServerOptions& opts);
  ~Server();
  // Binds the socket; returns the port actually bound.
  Result<int> bind();
  // Serves until stop(), then drains: no new connections, idle ones closed, requests in flight
  // finish within shutdown_grace_s (then their jobs are cancelled), and returns.
  void run();
  // From any thread (the signal thread): begins the shutdown that run() completes.
  void stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Every route the server answers, as (OpenAPI path, method): "/v1/models/{id}" stands for the
// model routes. Anything else is refused (404 / 405) before a body is read; docs/openapi.json
// describes exactly these (tests/server/test_server_openapi.cpp).
std::vector<std::pair<std::string, std::string>> api_routes();

}  // namespace inkling::server
