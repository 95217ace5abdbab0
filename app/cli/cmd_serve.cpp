// `inkling serve`: the OpenAI-compatible HTTP server (app/server). SIGINT/SIGTERM are handled by
// a sigwait thread, which stops the server cleanly (no work in a signal handler).
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "../server/server.h"
#include "commands.h"
#include "draft_option.h"
#include "expert_parallel_option.h"
#include "kv_option.h"
#include "model_path.h"
#include "numerics_option.h"
#include "terminal.h"

namespace inkling::cli {

namespace {

// The API key from --api-key, else --api-key-file, else $INKLING_API_KEY (the command line is
// visible to every user through ps; a file or the environment is not).
Status resolve_api_key(const std::string& file, std::string* key) {
  if (!key->empty() && !file.empty())
    return Status::error("[serve] give --api-key or --api-key-file, not both");
  if (!file.empty()) {
    std::ifstream f(file);
    if (!f) return Status::error("[serve] --api-key-file " + file + ": cannot read");
    std::getline(f, *key);
    while (!key->empty() && std::isspace(static_cast<unsigned char>(key->back()))) key->pop_back();
    if (key->empty()) return Status::error("[serve] --api-key-file " + file + ": empty first line");
    return Status::success();
  }
  if (key->empty())
    if (const char* env = std::getenv("INKLING_API_KEY"); env && *env) *key = env;
  return Status::success();
}

}  // namespace

Runner add_serve(CLI::App& app) {
  auto o = std::make_shared<server::ServerOptions>();
  app.add_option("-m,--model", o->model_dir, "model folder")->required();
  app.add_option("--host", o->net.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o->net.port, "port (0 = any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--parallel,--np", o->parallel, "requests decoded together (slots)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("-c,--ctx-size", o->ctx_size,
                 "context per slot in tokens (0 = model_max_length, at most 32768)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 32));
  app.add_option("--api-key", o->api_key,
                 "require 'Authorization: Bearer KEY' (visible in ps: prefer --api-key-file or "
                 "INKLING_API_KEY)");
  auto key_file = std::make_shared<std::string>();
  app.add_option("--api-key-file", *key_file, "read the API key from the first line of FILE");
  add_kv_type_option(app, &o->kv_type);
  auto numerics = std::make_shared<std::string>("fast");
  add_numerics_option(app, numerics.get());
  app.add_option("-t,--threads", o->threads,
                 "engine threads (0 = one per CPU this process may use)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--queue-size", o->max_queue, "requests waiting for a slot before 503")
      ->capture_default_str();
  app.add_option("--batch-tokens", o->batch_tokens, "prompt tokens per scheduler step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--prefix-cache-mb", o->prefix_cache_mb, "memory for prefix-cache snapshots")
      ->capture_default_str();
  app.add_option("--max-body-bytes", o->max_body_bytes,
                 "largest request body in bytes after decoding (chunked, gzip)")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1024), size_t(1) << 32));
  app.add_option("--max-body-memory-mb", o->max_body_memory_mb,
                 "request bodies held at once by all connections; more: 503")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1), size_t(1) << 20));
  app.add_option("--max-connections", o->net.max_connections,
                 "open connections at once; more are answered 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--backlog", o->net.backlog, "listen backlog (connections waiting to be accepted)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  app.add_option("--request-timeout", o->net.request_timeout_s,
                 "seconds a client has to send a whole request (head and body)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--idle-timeout", o->net.idle_timeout_s,
                 "seconds a keep-alive connection may wait for its next request")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--io-timeout", o->net.io_timeout_s,
                 "seconds one socket read or write may make no progress")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--shutdown-grace", o->net.shutdown_grace_s,
                 "on SIGTERM/SIGINT: seconds requests in flight may still finish")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--alias", o->alias, "model id reported by the API (default: folder name)");
  app.add_option("--media-dir", o->media_dir,
                 "serve image/audio parts given as local paths (or file:// URLs) under DIR; "
                 "without it only data: URLs and input_audio are accepted");
  app.add_option("--max-image-pixels", o->max_image_pixels,
                 "largest decoded image accepted (width x height)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  app.add_option("--max-audio-seconds", o->max_audio_seconds, "longest recording accepted")
      ->check(CLI::Range(0.1, 3600.0));
  add_draft_options(
      app, &o->draft, &o->draft_vocab,
      "speculative decoding with K MTP drafts per round (requests asking for logprobs "
      "decode plainly; no prefix-cache reuse for speculative requests); 0 = off");
  auto ep_args = std::make_shared<ExpertParallelArgs>();
  add_expert_parallel_options(app, ep_args.get());
  app.add_flag("-v,--verbose", o->verbose, "log each request to stderr");
  // TEST ONLY: forced outputs for deterministic end-to-end tests (docs/api.md, "Testing").
  app.add_option("--test-script", o->test_script)->group("");
  return [o, key_file, ep_args, numerics]() -> int {
    auto mode = numerics_option(*numerics);
    if (!mode.ok()) return fail(mode.status().message(), 2);
    o->numerics = mode.value();
    if (auto st = resolve_api_key(*key_file, &o->api_key); !st.ok()) return fail(st.message());
    if (std::string bad = check_model_folder(o->model_dir); !bad.empty()) return fail(bad, 2);
#ifdef __GLIBC__
    // Request bodies (up to --max-body-bytes) and per-request buffers are allocated by many
    // connection threads. A fixed mmap threshold returns each large buffer to the system when
    // freed; glibc's adaptive one would raise itself to 8 MiB and leave such buffers parked in
    // every thread arena (hundreds of MB of resident memory under load, never returned).
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by every thread started below
    // With --expert-parallel, ranks > 0 only serve experts; rank 0 serves HTTP and runs every
    // scheduler step with the experts spread over the ranks.
    ExpertParallel ep;
    EngineOptions eo;
    eo.numerics = o->numerics;  // before ep.start: the expert ranks bind kernels with it
    if (auto rc = ep.start(*ep_args, o->model_dir, o->threads, &eo)) return *rc;
    o->expert_executor = eo.expert_executor;
    BusyIndicator busy("loading " + o->model_dir);
    auto srv = server::Server::create(*o);
    busy.done();
    if (!srv.ok()) return fail(srv.status().message());
    auto port = srv.value()->bind();
    if (!port.ok()) return fail(port.status().message());
    std::printf("inkling serve: listening on http://%s:%d\n", o->net.host.c_str(), port.value());
    std::fflush(stdout);
    server::Server* s = srv.value().get();
    std::thread sig([s, set] {
      int signo = 0;
      sigwait(&set, &signo);
      if (signo == SIGINT || signo == SIGTERM) s->stop();
    });
    s->run();
    // run() returned: if no signal arrived, wake the sigwait thread with one.
    pthread_kill(sig.native_handle(), SIGTERM);
    sig.join();
    return 0;
  };
}

}  // namespace inkling::cli
