// Server setup and the small routes: model loading, authentication, OpenAI-shaped errors for
// every status (404, 413, ...), /v1/models, /health, /metrics, /tokenize, /detokenize.
#include "server.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "context.h"
#include "inkling/speculative.h"
#include "listener.h"
#include "messages_api.h"
#include "web_ui.h"

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
  std::unique_ptr<Listener> listener;
  httplib::Server http;
  int port = 0;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() {
  if (impl_->listener) impl_->listener->drain([this] { impl_->ctx.scheduler->stop(); });
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
  static const char* kRoutes[] = {"/v1/chat/completions",
                                  "/v1/responses",
                                  "/v1/messages",
                                  "/v1/completions",
                                  "/v1/models",
                                  "/health",
                                  "/metrics",
                                  "/tokenize",
                                  "/detokenize",
                                  "/openapi.json",
                                  "/"};
  for (const char* r : kRoutes)
    if (path == r) return r;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

void handle_tokenize(Context& ctx, const std::string& raw, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(raw, &body)) return send_error(res, *e);
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

void handle_detokenize(Context& ctx, const std::string& raw, httplib::Response& res) {
  ojson body;
  if (auto e = parse_json_body(raw, &body)) return send_error(res, *e);
  std::vector<int32_t> ids;
  if (auto e = parse_detokenize_request(body, int64_t(ctx.tok->vocab_size()), &ids))
    return send_error(res, *e);
  const std::string text = ctx.tok->decode(ids);
  send_json(res, {{"prompt", text}, {"content", text}});
}

// The routes and the methods they answer; anything else is refused before a body is read.
struct Route {
  const char* path;
  const char* method;  // "GET" (HEAD too) or "POST"
};
constexpr Route kRouteTable[] = {{"/v1/chat/completions", "POST"},
                                 {"/v1/responses", "POST"},
                                 {"/v1/messages", "POST"},
                                 {"/v1/completions", "POST"},
                                 {"/tokenize", "POST"},
                                 {"/detokenize", "POST"},
                                 {"/v1/models", "GET"},
                                 {"/health", "GET"},
                                 {"/metrics", "GET"},
                                 {"/openapi.json", "GET"},
                                 {"/", "GET"}};

const Route* find_route(const std::string& path) {
  for (const Route& r : kRouteTable)
    if (path == r.path) return &r;
  static constexpr Route kModel = {"/v1/models/{id}", "GET"};
  if (path.rfind("/v1/models/", 0) == 0 && path.size() > 11) return &kModel;
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> api_routes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Route& r : kRouteTable) out.emplace_back(r.path, r.method);
  out.emplace_back("/v1/models/{id}", "GET");
  return out;
}

namespace {

// The request announces a body (whose bytes would be parsed as the next request if unread).
bool announces_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// `Authorization: Bearer KEY`: the scheme is case-insensitive (RFC 9110 11.1); the key is
// compared in constant time.
bool authorized(const std::string& header, const std::string& key) {
  const size_t sp = header.find(' ');
  if (sp == std::string::npos || !iequals(std::string_view(header).substr(0, sp), "bearer"))
    return false;
  std::string_view token = std::string_view(header).substr(sp);
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  if (token.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(token[i] ^ key[i]);
  return diff == 0;
}

// Refuses a request before its body is read; an announced body stays unread, so the
// connection is not reused.
// Every error the server itself answers (refusals before routing, body reading, httplib's own
// statuses, exceptions) in the shape of the route's API: Anthropic's for /v1/messages.
// httplib answers a request line it cannot parse (a target with a space, a bad version) with 400
// before it sets req.path; the raw target it read so far still names the route.
void send_error_for(const httplib::Request& req, httplib::Response& res, const ApiError& e) {
  const std::string& route =
      req.path.empty() ? req.target.substr(0, req.target.find_first_of("?# ")) : req.path;
  if (route == "/v1/messages") return send_anthropic_error(res, e);
  send_error(res, e);
}

httplib::Server::HandlerResponse refuse(const httplib::Request& req, httplib::Response& res,
                                        const ApiError& e) {
  if (announces_body(req)) {
    conn::close_after_response();
    res.set_header("Connection", "close");
  }
  send_error_for(req, res, e);
  return httplib::Server::HandlerResponse::Handled;
}

// Bytes of request bodies held by all connections together, bounded by --max-body-memory-mb:
// with hundreds of connections each may send a body up to the per-request limit at once.
class BodyReservation {
 public:
  BodyReservation(std::atomic<int64_t>& in_use, int64_t budget)
      : in_use_(in_use), budget_(budget) {}
  ~BodyReservation() { in_use_ -= held_; }
  bool grow(size_t n) {
    if (in_use_.fetch_add(int64_t(n)) + int64_t(n) > budget_) {
      in_use_ -= int64_t(n);
      return false;
    }
    held_ += int64_t(n);
    return true;
  }

 private:
  std::atomic<int64_t>& in_use_;
  int64_t budget_;
  int64_t held_ = 0;
};

// Reads the request body, decoded (chunked transfer, gzip / deflate / br content encoding),
// stopping at max_body_bytes of DECODED bytes: neither a chunked stream nor a compression bomb
// gets past the limit.
std::optional<ApiError> read_body(const Context& ctx, const httplib::Request& req,
                                  httplib::Response& res, const httplib::ContentReader& reader,
                                  BodyReservation* reservation, std::string* body) {
  const size_t limit = ctx.opts.max_body_bytes;
  ApiError too_large;
  too_large.status = 413;
  too_large.code = "payload_too_large";
  too_large.message = "request body larger than " + std::to_string(limit) + " bytes";
  const bool chunked = req.has_header("Transfer-Encoding");
  if (chunked && !iequals(req.get_header_value("Transfer-Encoding"), "chunked")) {
    conn::close_after_response();
    return bad_request("unsupported Transfer-Encoding '" +
                           req.get_header_value("Transfer-Encoding") + "' (only chunked)",
                       "", "unsupported_transfer_encoding");
  }
  if (req.has_header("Content-Length")) {
    const std::string v = req.get_header_value("Content-Length");
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) {
      conn::close_after_response();
      return bad_request("invalid Content-Length '" + v + "'", "", "invalid_content_length");
    }
    if (std::stoull(v) > limit) {
      conn::close_after_response();
      return too_large;
    }
  } else if (!chunked) {
    conn::request_received();  // HTTP/1.1: no length and not chunked = no body
    return std::nullopt;
  }
  bool over = false, busy = false;
  const bool ok = reader([&](const char* data, size_t n) {
    if (body->size() + n > limit) {
      over = true;
      return false;
    }
    if (!reservation->grow(n)) {
      busy = true;
      return false;
    }
    body->append(data, n);
    return true;
  });
  if (over) {
    conn::close_after_response();
    return too_large;
  }
  if (busy) {
    conn::close_after_response();
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "server_busy";
    e.message = "request bodies in memory exceed --max-body-memory-mb; retry later";
    return e;
  }
  if (!ok) {
    conn::close_after_response();
    if (res.status == 415) {
      ApiError e = bad_request(
          "unsupported Content-Encoding '" + req.get_header_value("Content-Encoding") + "'", "",
          "unsupported_content_encoding");
      e.status = 415;
      return e;
    }
    return bad_request(
        "could not read the request body (malformed chunked or compressed data, or the client "
        "stopped sending)",
        "", "invalid_body");
  }
  conn::request_received();
  return std::nullopt;
}

ApiError internal_error(const httplib::Request& req, const char* what) {
  // The detail goes to the log, not to the client.
  std::fprintf(stderr, "inkling serve: internal error in %s %s: %s\n", req.method.c_str(),
               req.path.c_str(), what);
  ApiError err;
  err.status = 500;
  err.type = "server_error";
  err.message = "internal error";
  return err;
}

using BodyHandler = void (*)(Context&, const std::string&, httplib::Response&);

void install_routes(Server::Impl& s) {
  Context& ctx = s.ctx;
  httplib::Server& http = s.http;
  auto post = [&ctx, &http](const char* path, BodyHandler h) {
    http.Post(path, [&ctx, h](const httplib::Request& req, httplib::Response& res,
                              const httplib::ContentReader& reader) {
      try {
        std::string body;
        BodyReservation reservation(ctx.body_bytes_in_use,
                                    int64_t(ctx.opts.max_body_memory_mb << 20));
        if (auto e = read_body(ctx, req, res, reader, &reservation, &body)) {
          res.set_header("Connection", "close");  // every body error ends the connection
          return send_error_for(req, res, *e);
        }
        h(ctx, body, res);
      } catch (const std::exception& e) {
        send_error_for(req, res, internal_error(req, e.what()));
      }
    });
  };
  post("/v1/chat/completions", handle_chat);
  post("/v1/completions", handle_completions);
  post("/v1/responses", handle_responses);
  post("/v1/messages", handle_messages);
  post("/tokenize", handle_tokenize);
  post("/detokenize", handle_detokenize);
  auto model_json = [&ctx] {
    return ojson{{"id", ctx.model_id},
                 {"object", "model"},
                 {"created", ctx.created},
                 {"owned_by", "inkling"},
                 {"max_model_len", ctx.ctx_size},
                 {"numerics", ctx.engine->info().numerics},
                 {"kv_type", ctx.engine->info().kv_type}};
  };
  http.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"object", "list"}, {"data", ojson::array({model_json()})}});
  });
  http.Get(R"(/v1/models/(.+))", [&ctx, model_json](const httplib::Request& req,
                                                    httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id == ctx.model_id) return send_json(res, model_json());
    ApiError e;
    e.status = 404;
    e.message = "The model '" + id + "' does not exist (this server serves '" + ctx.model_id + "')";
    e.param = "model";
    e.code = "model_not_found";
    send_error(res, e);
  });
  http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", "ok"}});
  });
  http.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    std::string text = ctx.metrics.render();
    // The engine's fixed settings as an info metric (value 1, the settings in its labels).
    const ModelInfo& info = ctx.engine->info();
    text +=
        "# HELP inkling_engine_info Settings the engine was loaded with (--numerics, "
        "--kv-type).\n# TYPE inkling_engine_info gauge\ninkling_engine_info{numerics=\"" +
        info.numerics + "\",kv_type=\"" + info.kv_type + "\"} 1\n";
    if (ctx.listener) {
      const ListenerStats& st = ctx.listener->stats();
      text += "# TYPE inkling_connections_open gauge\ninkling_connections_open " +
              std::to_string(st.open.load()) + "\n";
      text +=
          "# TYPE inkling_connections_accepted_total counter\n"
          "inkling_connections_accepted_total " +
          std::to_string(st.accepted.load()) + "\n";
      text +=
          "# TYPE inkling_connections_rejected_total counter\n"
          "inkling_connections_rejected_total " +
          std::to_string(st.rejected_full.load()) + "\n";
      text +=
          "# TYPE inkling_connections_timed_out_total counter\n"
          "inkling_connections_timed_out_total " +
          std::to_string(st.timed_out.load()) + "\n";
    }
    res.set_content(text, "text/plain; version=0.0.4");
  });
  install_web_ui(http);
  http.Options(".*", [](const httplib::Request&, httplib::Response& res) {
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
  });
  // Runs once the head of a request is in, before any body byte is read: everything that can be
  // refused is refused here, so only the POST routes ever read a body (bounded, read_body).
  http.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (ctx.listener && ctx.listener->stopping()) {
      ApiError e;
      e.status = 503;
      e.type = "server_error";
      e.code = "shutting_down";
      e.message = "the server is shutting down";
      conn::close_after_response();
      return refuse(req, res, e);
    }
    if (req.method == "OPTIONS") {
      if (announces_body(req)) conn::close_after_response();
      conn::request_received();
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const Route* route = find_route(req.path);
    if (!route) {
      ApiError e;
      e.status = 404;
      e.type = "not_found_error";
      e.code = "not_found";
      e.message = "unknown route: " + req.method + " " + req.path;
      return refuse(req, res, e);
    }
    const std::string want = route->method;
    if (!(req.method == want || (want == "GET" && req.method == "HEAD"))) {
      ApiError e;
      e.status = 405;
      e.code = "method_not_allowed";
      e.message = "method " + req.method + " not allowed on " + req.path + "; use " + want;
      res.set_header("Allow", want == "GET" ? "GET, HEAD, OPTIONS" : want + ", OPTIONS");
      return refuse(req, res, e);
    }
    if (!ctx.opts.api_key.empty() && req.path != "/health" && req.path != "/") {
      std::string auth = req.get_header_value("Authorization");
      // Anthropic clients send the key as `x-api-key: KEY`.
      if (auth.empty() && req.has_header("x-api-key"))
        auth = "Bearer " + req.get_header_value("x-api-key");
      if (!authorized(auth, ctx.opts.api_key)) {
        ApiError e;
        e.status = 401;
        e.type = "authentication_error";
        e.code = "invalid_api_key";
        e.message =
            auth.empty()
                ? "missing API key: send 'Authorization: Bearer <key>' (or 'x-api-key: <key>')"
                : "invalid API key";
        return refuse(req, res, e);
      }
    }
    if (want == "GET") {
      if (announces_body(req)) conn::close_after_response();  // a GET body is never read
      conn::request_received();
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([&ctx](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    e.status = res.status;
    if (res.status == 404) {
      e.type = "not_found_error";
      e.message = "unknown route: " + req.method + " " + req.path;
      e.code = "not_found";
    } else if (res.status == 413) {
      e.message = "request body larger than " + std::to_string(ctx.opts.max_body_bytes) + " bytes";
      e.code = "payload_too_large";
    } else {
      e.message = "HTTP " + std::to_string(res.status);
      if (res.status >= 500) e.type = "server_error";
    }
    send_error_for(req, res, e);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error_for(req, res, internal_error(req, what.c_str()));
      });
  http.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    conn::response_written();
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
  eo.kv_type = opts.kv_type;
  eo.numerics = opts.numerics;
  eo.expert_executor = opts.expert_executor;
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
  so.draft = opts.draft;
  so.draft_vocab = opts.draft_vocab;
  if (opts.draft > 0) {  // the depths and the draft count are checked before serving
    auto probe = ctx.engine->new_session();
    auto d = SpeculativeDecoder::create(*probe, opts.draft, opts.draft_vocab);
    if (!d.ok()) return Status::error("--draft: " + d.status().message());
  }
  ctx.scheduler = std::make_unique<Scheduler>(ctx.engine, so, &ctx.metrics);

  impl->listener = std::make_unique<Listener>(opts.net);
  ctx.listener = impl->listener.get();
  auto secs = [](double s) { return std::chrono::duration<double>(s); };
  impl->http.set_read_timeout(secs(opts.net.io_timeout_s));
  impl->http.set_write_timeout(secs(opts.net.io_timeout_s));
  impl->http.set_keep_alive_timeout(std::max<time_t>(1, time_t(opts.net.idle_timeout_s + 0.5)));
  impl->http.set_keep_alive_max_count(1000);
  impl->http.set_payload_max_length(opts.max_body_bytes);
  impl->http.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
  install_routes(*impl);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Result<int> Server::bind() {
  INK_ASSIGN_OR_RETURN(impl_->port, impl_->listener->bind(impl_->http));
  return impl_->port;
}

void Server::run() {
  Impl& s = *impl_;
  s.listener->run(s.http);
  // Drain: requests in flight (and queued ones: the scheduler keeps running) get the grace
  // period; what is left then is cancelled and answered 503.
  s.listener->drain([&s] { s.ctx.scheduler->stop(); });
  s.ctx.scheduler->stop();
}

void Server::stop() {
  impl_->listener->stop();
}

}  // namespace inkling::server
