// `inkling serve`: the OpenAI-compatible HTTP server (app/server). SIGINT/SIGTERM are handled by
// a sigwait thread, which stops the server cleanly (no work in a signal handler).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "../server/server.h"
#include "commands.h"

namespace inkling::cli {

Runner add_serve(CLI::App& app) {
  auto o = std::make_shared<server::ServerOptions>();
  app.add_option("-m,--model", o->model_dir, "model folder")->required();
  app.add_option("--host", o->host, "address to listen on")->capture_default_str();
  app.add_option("--port", o->port, "port (0 = any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--parallel,--np", o->parallel, "requests decoded together (slots)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("-c,--ctx-size", o->ctx_size,
                 "context per slot in tokens (0 = model_max_length, at most 32768)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 32));
  app.add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY'");
  app.add_option("-t,--threads", o->threads, "engine threads (0 = all cores)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--queue-size", o->max_queue, "requests waiting for a slot before 503")
      ->capture_default_str();
  app.add_option("--batch-tokens", o->batch_tokens, "prompt tokens per scheduler step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--prefix-cache-mb", o->prefix_cache_mb, "memory for prefix-cache snapshots")
      ->capture_default_str();
  app.add_option("--alias", o->alias, "model id reported by the API (default: folder name)");
  app.add_flag("-v,--verbose", o->verbose, "log each request to stderr");
  // TEST ONLY: forced outputs for deterministic end-to-end tests (docs/api.md, "Testing").
  app.add_option("--test-script", o->test_script)->group("");
  return [o]() -> int {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by every thread started below
    auto srv = server::Server::create(*o);
    if (!srv.ok()) return fail(srv.status().message());
    auto port = srv.value()->bind();
    if (!port.ok()) return fail(port.status().message());
    std::printf("inkling serve: listening on http://%s:%d\n", o->host.c_str(), port.value());
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
