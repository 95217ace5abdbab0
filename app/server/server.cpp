// Server setup and the small routes: model loading, authentication, OpenAI-shaped errors for
// every status (404, 413, ...), /v1/models, /health, /metrics, /tokenize, /detokenize.
#include "server.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "context.h"

namespace inkling::server {

std::string dump_json(const ojson& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void send_json(httplib::Response& res, const ojson& j, int status) {
  res.status = status;
  res.set_content(dump_json(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, error_body(e), e.status);
}

std::vector<int32_t> Context::forced_for(const std::string& prompt_text) const {
  for (const auto& s : script)
    if (prompt_text.find(s.when) != std::string::npos) return s.output;
  return {};
}

struct Server::Impl {
  Context ctx;
  httplib::Server http;
  int port = 0;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() {
  if (impl_->ctx.scheduler) impl_->ctx.scheduler->stop();
}

namespace {

Status load_script(Context& ctx, const std::string& path) {
  std::ifstream f(path);
  ojson j = ojson::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    return Status::error("[server] --test-script " + path + ": expected a JSON array");
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("when") || !e.contains("output") || !e["when"].is_string() ||
        !e["output"].is_string())
      return Status::error("[server] --test-script: entries are {\"when\": str, \"output\": str}");
    ctx.script.push_back(
        {e["when"].get<std::string>(), ctx.tok->encode(e["output"].get<std::string>(), true)});
  }
  return Status::success();
}

const char* route_label(const std::string& path) {
  static const char* kRoutes[] = {
      "/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/tokenize",
      "/detokenize"};
  for (const char* r : kRoutes)
    if (path == r) return r;
  return "other";
}

void handle_tokenize(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(req.body, &body)) return send_error(res, *e);
  TokenizeRequest tr;
  if (auto e = parse_tokenize_request(body, &tr)) return send_error(res, *e);
  std::string text = tr.text;
  if (tr.is_chat) {
    auto r = ctx.tmpl->render(tr.render_request);
    if (!r.ok())
      return send_error(res, bad_request(r.status().message(), "messages", "template_error"));
    text = r.value();
  }
  const auto ids = ctx.tok->encode(text, tr.add_special);
  ojson out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", ctx.ctx_size}};
  if (tr.with_pieces) {
    ojson pieces = ojson::array();
    for (int32_t id : ids) pieces.push_back({{"id", id}, {"piece", ctx.tok->token_bytes(id)}});
    out["pieces"] = pieces;
  }
  send_json(res, out);
}

void handle_detokenize(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(req.body, &body)) return send_error(res, *e);
  std::vector<int32_t> ids;
  if (auto e = parse_detokenize_request(body, int64_t(ctx.tok->vocab_size()), &ids))
    return send_error(res, *e);
  const std::string text = ctx.tok->decode(ids);
  send_json(res, {{"prompt", text}, {"content", text}});
}

void install_routes(Server::Impl& s) {
  Context& ctx = s.ctx;
  httplib::Server& http = s.http;
  auto guard = [&ctx](void (*h)(Context&, const httplib::Request&, httplib::Response&)) {
    return [&ctx, h](const httplib::Request& req, httplib::Response& res) {
      try {
        h(ctx, req, res);
      } catch (const std::exception& e) {
        ApiError err;
        err.status = 500;
        err.type = "server_error";
        err.message = std::string("internal error: ") + e.what();
        send_error(res, err);
      }
    };
  };
  http.Post("/v1/chat/completions", guard(handle_chat));
  http.Post("/v1/completions", guard(handle_completions));
  http.Post("/tokenize", guard(handle_tokenize));
  http.Post("/detokenize", guard(handle_detokenize));
  http.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    ojson m = {{"id", ctx.model_id},
               {"object", "model"},
               {"created", ctx.created},
               {"owned_by", "inkling"},
               {"max_model_len", ctx.ctx_size}};
    send_json(res, {{"object", "list"}, {"data", ojson::array({m})}});
  });
  http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", "ok"}});
  });
  http.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics.render(), "text/plain; version=0.0.4");
  });
  http.Options(".*", [](const httplib::Request&, httplib::Response& res) {
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
  });
  http.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (ctx.opts.api_key.empty() || req.path == "/health" || req.method == "OPTIONS")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth == "Bearer " + ctx.opts.api_key) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message =
        auth.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key";
    send_error(res, e);
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [&ctx](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = res.status;
        if (res.status == 404) {
          e.type = "not_found_error";
          e.message = "unknown route: " + req.method + " " + req.path;
          e.code = "not_found";
        } else if (res.status == 413) {
          e.message =
              "request body larger than " + std::to_string(ctx.opts.max_body_bytes >> 20) + " MiB";
          e.code = "payload_too_large";
        } else {
          e.message = "HTTP " + std::to_string(res.status);
          if (res.status >= 500) e.type = "server_error";
        }
        send_error(res, e);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        ApiError e;
        e.status = 500;
        e.type = "server_error";
        e.message = "internal error";
        send_error(res, e);
      });
  http.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics.count_request(route_label(req.path), res.status);
    if (ctx.opts.verbose)
      std::fprintf(stderr, "%s %s -> %d\n", req.method.c_str(), req.path.c_str(), res.status);
  });
}

}  // namespace

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& opts) {
  auto impl = std::make_unique<Impl>();
  Context& ctx = impl->ctx;
  ctx.opts = opts;
  EngineOptions eo;
  eo.n_threads = opts.threads;
  eo.max_context = opts.ctx_size;  // sessions enforce it too, not only the request checks
  INK_ASSIGN_OR_RETURN(ctx.engine, Engine::load(opts.model_dir, eo));
  INK_ASSIGN_OR_RETURN(ctx.tok, Tokenizer::load(opts.model_dir));
  INK_ASSIGN_OR_RETURN(auto tmpl, ChatTemplate::load(opts.model_dir));
  ctx.tmpl = std::make_unique<ChatTemplate>(std::move(tmpl));
  auto tok = ctx.tok;
  INK_ASSIGN_OR_RETURN(ctx.ids, SpecialTokenIds::from_lookup(
                                    [tok](std::string_view s) { return tok->token_id(s); }));
  ctx.eos_ids = ctx.engine->info().eos_ids;
  if (ctx.eos_ids.empty()) ctx.eos_ids.push_back(ctx.ids.end_sampling);
  const int64_t model_len = ctx.engine->info().max_context;
  ctx.ctx_size = opts.ctx_size > 0 ? opts.ctx_size
                                   : (model_len > 0 ? std::min<int64_t>(model_len, 32768) : 8192);
  ctx.model_id = !opts.alias.empty()
                     ? opts.alias
                     : std::filesystem::path(opts.model_dir).lexically_normal().filename().string();
  if (ctx.model_id.empty())
    ctx.model_id = std::filesystem::path(opts.model_dir).parent_path().filename().string();
  ctx.created = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  if (!opts.test_script.empty()) INK_RETURN_IF_ERROR(load_script(ctx, opts.test_script));
  SchedulerOptions so;
  so.n_slots = std::max(1, opts.parallel);
  so.ctx_size = ctx.ctx_size;
  so.max_queue = opts.max_queue;
  so.batch_tokens = std::max<int64_t>(1, opts.batch_tokens);
  so.prefix_cache_bytes = opts.prefix_cache_mb << 20;
  ctx.scheduler = std::make_unique<Scheduler>(ctx.engine, so, &ctx.metrics);

  const size_t n_http =
      opts.http_threads > 0 ? size_t(opts.http_threads) : size_t(so.n_slots) + so.max_queue + 8;
  impl->http.new_task_queue = [n_http] { return new httplib::ThreadPool(n_http); };
  impl->http.set_payload_max_length(opts.max_body_bytes);
  impl->http.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
  install_routes(*impl);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Result<int> Server::bind() {
  Impl& s = *impl_;
  if (s.ctx.opts.port == 0) {
    s.port = s.http.bind_to_any_port(s.ctx.opts.host);
    if (s.port <= 0) return Status::error("[server] cannot bind " + s.ctx.opts.host);
  } else {
    if (!s.http.bind_to_port(s.ctx.opts.host, s.ctx.opts.port))
      return Status::error("[server] cannot bind " + s.ctx.opts.host + ":" +
                           std::to_string(s.ctx.opts.port) + " (in use?)");
    s.port = s.ctx.opts.port;
  }
  return s.port;
}

void Server::run() {
  impl_->http.listen_after_bind();
  impl_->ctx.scheduler->stop();
}

void Server::stop() {
  // The scheduler first: it ends every job, so HTTP workers waiting on one can return and the
  // HTTP thread pool can shut down.
  impl_->ctx.scheduler->stop();
  impl_->http.stop();
}

}  // namespace inkling::server
