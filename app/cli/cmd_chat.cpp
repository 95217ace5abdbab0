// `inkling chat`: an interactive conversation in the terminal. Each turn renders the whole
// conversation with the model's chat template, reuses the session state of the previous turn's
// prompt (restored from a snapshot, so nothing is re-prefilled), streams the answer and shows the
// reasoning dimmed (or a "thinking... N tokens" line while it is hidden).
//
// On a terminal: line editing and history (libedit), Ctrl-C stops an answer (twice at the prompt
// leaves), progress for long prompts and a timing line per answer. With stdin or stdout not a
// terminal: plain lines in, plain text out, no escape codes. Local commands: see chat_help().
// /image FILE and /audio FILE attach files to the next message: the tower rows stay with the
// conversation (one entry per image/audio part of messages_, in order), so later turns render
// the same placeholders and reuse the previous prompt's state as text-only turns do.
// With --draft K the answer is decoded speculatively with the model's MTP depths; the previous
// prompt's state is kept for the depths too (SpeculativeDecoder::snapshot), so a turn that
// extends it runs only its new tokens, as without drafts.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat_input.h"
#include "chat_messages.h"
#include "commands.h"
#include "draft_option.h"
#include "inkling/chat.h"
#include "inkling/engine.h"
#include "inkling/media.h"
#include "inkling/sampler.h"
#include "inkling/speculative.h"
#include "inkling/tokenizer.h"
#include "kv_option.h"
#include "line_input.h"
#include "media_attach.h"
#include "model_path.h"
#include "numerics_option.h"
#include "sampling_options.h"
#include "terminal.h"

namespace inkling::cli {

namespace {

using ojson = nlohmann::ordered_json;

// --reasoning-effort as the chat template takes it: a level name stays a string, a number
// becomes a JSON number (the template rejects "0.9" as a string). Null when neither.
ojson effort_value(const std::string& v) {
  for (const char* name : {"none", "minimal", "low", "medium", "high", "max"})
    if (v == name) return v;
  size_t used = 0;
  double x = -1;
  try {
    x = std::stod(v, &used);
  } catch (...) {
    return nullptr;
  }
  if (used != v.size() || !(x >= 0 && x <= 0.99)) return nullptr;
  return x;
}

struct ChatArgs {
  std::string model_dir, system, effort;
  int max_tokens = 2048, threads = 0;
  int64_t ctx_size = 0;
  int draft = 0;            // --draft K: speculative decoding with K MTP drafts (0 = off)
  int64_t draft_vocab = 0;  // --draft-vocab N
  KvCacheType kv_type = KvCacheType::kF32;
  Numerics numerics = Numerics::kFast;  // from numerics_name, checked before the load
  std::string numerics_name = "fast";   // --numerics (numerics_option.h)
  bool show_reasoning = false, no_history = false;
  double upscale = -1;  // --upscale for /image (< 0: the model's default)
  SamplingOptions sampling;
};

void out(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

extern "C" void on_sigint(int) {
  g_sigint = 1;
}

class Chat {
 public:
  Chat(const ChatArgs& a, SamplingParams params) : a_(a), params_(params), sampler_(params) {}
  int run();

 private:
  // Notes for the user (context dropped, stopped, ...): stderr, dimmed on a terminal.
  void note(const std::string& s) const {
    if (err_tty_)
      std::fprintf(stderr, "\x1b[2m%s\x1b[0m\n", s.c_str());
    else
      std::fprintf(stderr, "%s\n", s.c_str());
    std::fflush(stderr);
  }
  // Acknowledgements of commands ("(new conversation)"): on a terminal only, so piped output
  // holds just the answers (and what /help and /stats print).
  void ack(const std::string& s) const {
    if (out_tty_) out(s);
  }
  size_t first_turn() const { return has_system() ? 1 : 0; }
  bool has_system() const { return !messages_.empty() && messages_[0]["role"] == "system"; }
  void forget_state() {
    consumed_.clear();
    at_prompt_.reset();
    at_prompt_spec_.reset();
  }
  // Image and audio parts of a message (each has one entry in media_).
  static size_t media_parts(const ojson& m) {
    size_t n = 0;
    if (m.contains("content") && m["content"].is_array())
      for (const auto& p : m["content"]) n += p.is_object() && p.value("type", "") != "text";
    return n;
  }
  // Replaces the conversation (/reset, /system, /load): the attachments go with it.
  void replace_messages(ojson m) {
    messages_ = std::move(m);
    if (!media_.empty()) forget_state();  // the same placeholder ids may carry other rows next
    media_.clear();
    pending_.clear();
  }
  void drop_last_message() {
    media_.resize(media_.size() - media_parts(messages_.back()));
    messages_.erase(messages_.size() - 1);
  }
  // Drops the oldest turn (a user message and everything up to the next user message).
  bool drop_oldest_turn() {
    size_t i = first_turn();
    if (i >= messages_.size()) return false;
    size_t j = i + 1;
    while (j < messages_.size() && messages_[j]["role"] != "user") ++j;
    if (j >= messages_.size()) return false;  // that is the turn being asked now
    size_t n = 0;
    for (size_t k = i; k < j; ++k) n += media_parts(messages_[k]);
    media_.erase(media_.begin(), media_.begin() + ptrdiff_t(n));
    if (n > 0) forget_state();
    messages_.erase(messages_.begin() + ptrdiff_t(i), messages_.begin() + ptrdiff_t(j));
    return true;
  }
  // The prompt's ids with each placeholder expanded to its attachment's rows (rows[i]: the
  // tower row of position i, null for text; filled only when `rows` is given).
  Result<std::vector<int32_t>> render(const ojson& messages, std::span<const MediaEmbedding> media,
                                      std::vector<const float*>* rows = nullptr) const {
    ojson request = {{"messages", messages}};
    if (!effort_.empty()) request["reasoning_effort"] = effort_value(effort_);
    auto prompt = tmpl_->render(request);
    if (!prompt.ok()) return prompt.status();
    std::vector<int32_t> ids = tokenizer_->encode(prompt.value());
    std::vector<const float*> unused;
    if (!media.empty())
      if (Status s = media_rows(*engine_, ids, media, rows ? rows : &unused); !s) return s;
    return ids;
  }
  Result<std::vector<int32_t>> render(std::vector<const float*>* rows = nullptr) const {
    return render(messages_, media_, rows);
  }
  void attach(bool image, const std::string& path);
  bool command(const ChatInput& in);  // false: leave
  void turn(const std::string& text);
  void stats() const;

  const ChatArgs& a_;
  SamplingParams params_;
  Sampler sampler_;
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::optional<ChatTemplate> tmpl_;
  std::optional<SpecialTokenIds> ids_;
  std::unique_ptr<Session> session_;
  std::vector<int32_t> consumed_;  // ids the session holds (the last prompt)
  std::shared_ptr<const SessionSnapshot> at_prompt_;
  std::shared_ptr<const SpeculativeSnapshot> at_prompt_spec_;  // --draft: the depths' state there
  ojson messages_ = ojson::array();
  std::vector<MediaEmbedding> media_;    // the attachments of messages_, in order
  std::vector<MediaEmbedding> pending_;  // attached for the next message
  std::string effort_;
  bool show_reasoning_ = false;
  bool out_tty_ = false, err_tty_ = false;
  int64_t ctx_ = 0;  // the session's limit (0 = none)
  Timings total_;    // all turns
  Timings last_;     // the last turn
};

bool Chat::command(const ChatInput& in) {
  const std::string& c = in.command;
  if (c == "bye" || c == "exit" || c == "quit") return false;
  if (c == "help" || c == "?") {
    out(chat_help());
  } else if (c == "reset" || c == "clear") {
    ojson kept = ojson::array();
    if (has_system()) kept.push_back(messages_[0]);
    replace_messages(std::move(kept));
    ack("(new conversation)\n");
  } else if (c == "system") {
    replace_messages(ojson::array());
    if (!in.text.empty()) messages_.push_back({{"role", "system"}, {"content", in.text}});
    ack(in.text.empty() ? "(system message removed; new conversation)\n"
                        : "(system message set; new conversation)\n");
  } else if (c == "effort") {
    if (!in.text.empty() && effort_value(in.text).is_null()) {
      note(
          "/effort: expected none, minimal, low, medium, high, max or a number in [0, 0.99], "
          "got '" +
          in.text + "'");
    } else {
      effort_ = in.text;
      ack("(reasoning effort: " + (effort_.empty() ? std::string("template default") : effort_) +
          ")\n");
    }
  } else if (c == "think") {
    if (in.text == "on" || in.text == "off") {
      show_reasoning_ = in.text == "on";
      ack(show_reasoning_ ? "(reasoning shown)\n" : "(reasoning hidden)\n");
    } else {
      note("/think: expected on or off");
    }
  } else if (c == "save") {
    if (in.text.empty()) {
      note("/save: give a file name");
    } else if (Status s = save_messages(in.text, messages_); !s) {
      note(s.message());
    } else {
      ack("(saved " + std::to_string(messages_.size()) + " messages to " + in.text + ")\n");
    }
  } else if (c == "load") {
    auto m = in.text.empty() ? Result<ojson>(Status::error("/load: give a file name"))
                             : load_messages(in.text);
    if (!m.ok()) {
      note(m.status().message());
    } else {
      replace_messages(std::move(m).value());
      ack("(loaded " + std::to_string(messages_.size()) + " messages from " + in.text + ")\n");
    }
  } else if (c == "image" || c == "audio") {
    attach(c == "image", in.text);
  } else if (c == "stats") {
    stats();
  } else {
    note("unknown command /" + c + " (/help lists them; start with // to send a leading /)");
  }
  return true;
}

void Chat::attach(bool image, const std::string& path) {
  const std::string cmd = image ? "/image" : "/audio";
  if (path.empty()) return note(cmd + ": give a file name");
  if (a_.draft > 0) return note(cmd + ": not available with --draft");
  MediaOptions opts;
  opts.upscale = a_.upscale >= 0 ? std::optional<double>(a_.upscale) : std::nullopt;
  auto e = encode_file(*engine_, image, path, opts);
  if (!e.ok()) return note(cmd + ": " + e.status().message());
  ack("(attached " + path + ": " + e->description + "; it goes with the next message)\n");
  pending_.push_back(std::move(e).value());
}

void Chat::stats() const {
  std::string s = "last answer:\n" + last_.text("  ") + "whole chat:\n" + total_.text("  ");
  auto prompt = render();
  const size_t used = prompt.ok() ? prompt->size() : 0;
  s += "context: " + std::to_string(used) + " tokens in " + std::to_string(messages_.size()) +
       " messages, limit " + (ctx_ > 0 ? std::to_string(ctx_) : std::string("none")) + "\n";
  s += "engine: numerics " + engine_->info().numerics + ", KV cache " + engine_->info().kv_type +
       "\n";
  out(s);
}

void Chat::turn(const std::string& text) {
  if (pending_.empty()) {
    messages_.push_back({{"role", "user"}, {"content", text}});
  } else {
    // The attachments first, then the text (as --image/--audio place them).
    ojson parts = ojson::array();
    for (MediaEmbedding& m : pending_) {
      parts.push_back({{"type", m.kind == MediaKind::kImage ? "image" : "audio"}});
      media_.push_back(std::move(m));
    }
    pending_.clear();
    parts.push_back({{"type", "text"}, {"text", text}});
    messages_.push_back({{"role", "user"}, {"content", parts}});
  }
  std::vector<const float*> rows;  // tower rows over the expanded placeholders (else empty)
  auto rendered = render(&rows);
  if (!rendered.ok()) {
    note("error: " + rendered.status().message());
    drop_last_message();
    return;
  }
  std::vector<int32_t> prompt_ids = std::move(rendered).value();
  // Context full: drop the oldest turns until the prompt and some room for the answer fit. A
  // message that cannot fit even alone is refused first, and the conversation stays as it was.
  if (ctx_ > 0 && int64_t(prompt_ids.size()) >= ctx_) {
    ojson alone = ojson::array();
    if (has_system()) alone.push_back(messages_[0]);
    alone.push_back(messages_.back());
    const size_t own = media_parts(messages_.back());
    auto r = render(alone, std::span<const MediaEmbedding>(media_).last(own));
    if (r.ok() && int64_t(r->size()) >= ctx_) {
      note("error: this message needs " + std::to_string(r->size()) +
           " tokens of context and the limit is " + std::to_string(ctx_) +
           " (-c/--ctx-size raises it)");
      drop_last_message();
      return;
    }
  }
  if (ctx_ > 0) {
    const int64_t room = std::min<int64_t>(a_.max_tokens, std::max<int64_t>(ctx_ / 4, 1));
    int dropped = 0;
    while (int64_t(prompt_ids.size()) + room > ctx_ && drop_oldest_turn()) {
      ++dropped;
      auto r = render(&rows);
      if (!r.ok()) break;
      prompt_ids = std::move(r).value();
    }
    if (dropped > 0)
      note("(context full: dropped the " + std::to_string(dropped) + " oldest turn" +
           (dropped > 1 ? "s" : "") + " to make room)");
    if (int64_t(prompt_ids.size()) >= ctx_) {
      note("error: this message needs " + std::to_string(prompt_ids.size()) +
           " tokens of context and the limit is " + std::to_string(ctx_) +
           " (-c/--ctx-size raises it)");
      drop_last_message();
      return;
    }
  }
  const auto& eos = engine_->info().eos_ids;
  const auto t_turn = std::chrono::steady_clock::now();
  Timings t;
  t.seed = params_.seed;
  std::unique_ptr<SpeculativeDecoder> spec;
  int32_t first = -1;
  std::span<const float> l;
  auto abandon = [&](const std::string& why) {
    note(why);
    drop_last_message();
    forget_state();
  };
  // Reuse the previous prompt's state when this prompt extends it. With --draft the decoder is
  // made on the empty session, the depths' state is restored with the trunk's, and the new
  // tokens run through Engine::step (which keeps the trunk rows the depths read).
  session_->reset();
  if (a_.draft > 0) {
    auto d = SpeculativeDecoder::create(*session_, a_.draft, a_.draft_vocab);
    if (!d.ok()) return abandon("error: " + d.status().message());
    spec = std::move(d).value();
  }
  size_t start = 0;
  if (at_prompt_ && (!spec || at_prompt_spec_) && prompt_ids.size() > consumed_.size() &&
      std::equal(consumed_.begin(), consumed_.end(), prompt_ids.begin())) {
    session_->restore(*at_prompt_);
    if (!spec || spec->restore(*at_prompt_spec_).ok())
      start = consumed_.size();
    else
      session_->reset();
  }
  forget_state();
  // The new tokens in chunks: a progress bar for long prompts, and Ctrl-C between chunks.
  const size_t chunk = 256, n = prompt_ids.size() - start;
  ProgressBar bar("prompt", int64_t(n), "tokens");
  for (size_t i = 0; i < n; i += chunk) {
    const auto ids =
        std::span<const int32_t>(prompt_ids).subspan(start + i, std::min(chunk, n - i));
    Status st = Status::success();
    if (spec) {
      Session* const one[] = {session_.get()};
      const std::span<const int32_t> in[] = {ids};
      st = engine_->step(one, in);
      if (st.ok()) st = spec->prefilled(ids);
    } else {
      auto logits = rows.empty()
                        ? session_->prefill(ids)
                        : session_->prefill_rows(ids, std::span<const float* const>(rows).subspan(
                                                          start + i, ids.size()));
      if (logits.ok())
        l = logits.value();
      else
        st = logits.status();
    }
    if (!st.ok()) return abandon("error: " + st.message());
    bar.update(int64_t(std::min(n, i + chunk)));
    if (g_sigint) {
      g_sigint = 0;
      bar.finish();
      return abandon("(stopped while reading the prompt; the message was dropped)");
    }
  }
  bar.finish();
  consumed_ = prompt_ids;
  at_prompt_ = session_->snapshot();
  if (spec) at_prompt_spec_ = spec->snapshot();
  sampler_.set_prompt(prompt_ids);
  if (spec) {
    first = sampler_.next(session_->last_logits()).id;
    if (const Status st = spec->begin(first); !st.ok()) return abandon("error: " + st.message());
  }
  t.prompt_tokens = int64_t(n);
  t.prompt_ms = ms_since(t_turn);
  const auto t_gen = std::chrono::steady_clock::now();

  OutputParser parser(*ids_);
  StreamDecoder dec(tokenizer_, /*skip_special=*/true);
  bool in_reasoning = false;
  int64_t thinking = 0;  // reasoning tokens while hidden (the indicator's count)
  auto clear_indicator = [&] {
    if (thinking > 0 && out_tty_) out("\r\x1b[K");
    thinking = 0;
  };
  auto show = [&](const ParseDelta& d) {
    if (!d.reasoning.empty()) {
      if (show_reasoning_) {
        if (!in_reasoning && out_tty_) out("\x1b[2m");  // dim
        in_reasoning = true;
        out(d.reasoning);
      } else if (out_tty_) {
        ++thinking;
        out("\r\x1b[2mthinking... " + std::to_string(thinking) + " tokens\x1b[0m\x1b[K");
      }
    }
    if (!d.content.empty()) {
      clear_indicator();
      if (in_reasoning) out(out_tty_ ? "\x1b[0m\n" : "\n");
      in_reasoning = false;
      out(d.content);
    }
    for (const auto& tc : d.tool_calls) {
      clear_indicator();
      out((tc.name.empty() ? "" : "\n[tool call " + tc.name + "] ") + tc.arguments);
    }
  };
  // Shows one generated token; true when the answer ends with it.
  auto take = [&](int32_t tok) {
    ++t.gen_tokens;
    const bool control = tokenizer_->is_special(tok);
    ParseDelta d = parser.push(tok, control ? std::string() : dec.push(tok));
    show(d);
    return d.stop || std::find(eos.begin(), eos.end(), tok) != eos.end();
  };
  std::string stopped;  // why the answer ended early, for the user
  if (spec) {
    int n = 1;
    bool done = take(first);
    while (!done && n < a_.max_tokens) {
      if (g_sigint) {
        stopped = "(stopped)";
        break;
      }
      auto toks = spec->step(sampler_);
      if (!toks.ok()) {
        stopped = "error: " + toks.status().message();
        break;
      }
      for (int32_t tok : toks.value())
        if ((done = take(tok)) || ++n >= a_.max_tokens) break;
    }
  } else {
    for (int i = 0; i < a_.max_tokens; ++i) {
      if (g_sigint) {
        stopped = "(stopped)";
        break;
      }
      const int32_t tok = sampler_.next(l).id;
      if (take(tok)) break;
      if (ctx_ > 0 && session_->position() >= ctx_) {
        stopped = "(context full: the answer was cut; the oldest turns are dropped next time)";
        break;
      }
      auto next = session_->decode(tok);
      if (!next.ok()) {
        stopped = "error: " + next.status().message();
        break;
      }
      l = next.value();
    }
  }
  g_sigint = 0;
  std::clearerr(stdout);  // a write interrupted by Ctrl-C must not silence the rest of the chat
  show(parser.finish());
  clear_indicator();
  if (in_reasoning && out_tty_) out("\x1b[0m");
  out("\n");
  t.gen_ms = ms_since(t_gen);
  t.total_ms = ms_since(t_turn);
  t.load_ms = total_.load_ms;
  if (!stopped.empty()) note(stopped);
  const ParsedMessage& msg = parser.result();
  ojson reply = {{"role", "assistant"}, {"content", msg.content}};
  if (!msg.reasoning_content.empty()) reply["reasoning_content"] = msg.reasoning_content;
  messages_.push_back(reply);
  last_ = t;
  total_.prompt_tokens += t.prompt_tokens;
  total_.prompt_ms += t.prompt_ms;
  total_.gen_tokens += t.gen_tokens;
  total_.gen_ms += t.gen_ms;
  total_.total_ms += t.total_ms;
  if (err_tty_) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "[prompt %lld tokens, %.1f tok/s | answer %lld tokens, %.1f "
                  "tok/s | %.2f s]",
                  static_cast<long long>(t.prompt_tokens),
                  t.prompt_ms > 0 ? double(t.prompt_tokens) * 1e3 / t.prompt_ms : 0.0,
                  static_cast<long long>(t.gen_tokens),
                  t.gen_ms > 0 ? double(t.gen_tokens) * 1e3 / t.gen_ms : 0.0, t.total_ms / 1e3);
    note(buf);
  }
}

int Chat::run() {
  const auto t_load = std::chrono::steady_clock::now();
  EngineOptions eo;
  eo.n_threads = a_.threads;
  eo.kv_type = a_.kv_type;
  eo.numerics = a_.numerics;
  eo.max_context = a_.ctx_size;
  {
    BusyIndicator busy("loading " + a_.model_dir);
    auto engine = Engine::load(a_.model_dir, eo);
    if (!engine.ok()) return fail(engine.status().message());
    engine_ = engine.value();
  }
  auto tok = Tokenizer::load(a_.model_dir);
  if (!tok.ok()) return fail(tok.status().message());
  tokenizer_ = tok.value();
  auto tmpl = ChatTemplate::load(a_.model_dir);
  if (!tmpl.ok()) return fail(tmpl.status().message());
  tmpl_ = std::move(tmpl).value();
  auto ids =
      SpecialTokenIds::from_lookup([&](std::string_view s) { return tokenizer_->token_id(s); });
  if (!ids.ok()) return fail(ids.status().message());
  ids_ = ids.value();
  if (Status s = check_logit_bias(params_, engine_->info().unpadded_vocab); !s)
    return fail(s.message(), 2);
  session_ = engine_->new_session();
  if (a_.draft > 0)  // the draft count is checked once, before the first turn
    if (auto d = SpeculativeDecoder::create(*session_, a_.draft, a_.draft_vocab); !d.ok())
      return fail("--draft: " + d.status().message(), 2);
  total_.load_ms = ms_since(t_load);
  total_.seed = params_.seed;
  ctx_ = engine_->info().max_context;
  effort_ = a_.effort;
  show_reasoning_ = a_.show_reasoning;
  if (!a_.system.empty()) messages_.push_back({{"role", "system"}, {"content", a_.system}});

  const bool interactive = is_tty(0) && is_tty(1);
  out_tty_ = is_tty(1);
  err_tty_ = is_tty(2);
  std::unique_ptr<LineInput> input =
      LineInput::open(interactive, a_.no_history ? "" : default_history_path());
  if (interactive) {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a read at the prompt returns
    sigaction(SIGINT, &sa, nullptr);
    char buf[160];
    std::snprintf(buf, sizeof buf, "(model loaded in %.1f s; /help for commands, Ctrl-D to leave)",
                  total_.load_ms / 1e3);
    note(buf);
  }
  bool interrupted_at_prompt = false;
  for (;;) {
    ChatInput in = read_chat_input(*input);
    if (in.kind == ChatInput::Kind::kEnd) break;
    if (in.kind == ChatInput::Kind::kInterrupt) {
      g_sigint = 0;
      if (interrupted_at_prompt) break;
      interrupted_at_prompt = true;
      note("(Ctrl-C again, Ctrl-D or /bye to leave)");
      continue;
    }
    interrupted_at_prompt = false;
    if (in.kind == ChatInput::Kind::kCommand) {
      if (!command(in)) break;
      continue;
    }
    turn(in.text);
  }
  if (interactive) out("\n");
  return 0;
}

}  // namespace

Runner add_chat(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  a->sampling.params.temperature = 0.7f;
  a->sampling.params.top_p = 0.95f;
  app.add_option("-m,--model", a->model_dir, "model folder with tokenizer and chat template")
      ->required();
  app.add_option("--system", a->system, "system message");
  app.add_option("--reasoning-effort", a->effort,
                 "none, minimal, low, medium, high, max or a number in [0, 0.99] (default: the "
                 "chat template's)")
      ->check([](const std::string& v) -> std::string {
        if (effort_value(v).is_null())
          return "expected none, minimal, low, medium, high, max or a number in [0, 0.99], got '" +
                 v + "'";
        return "";
      });
  app.add_flag("--show-reasoning", a->show_reasoning, "print the model's reasoning (dimmed)");
  app.add_option("-n,--max-tokens", a->max_tokens, "most tokens per answer")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("-c,--ctx-size", a->ctx_size,
                 "longest conversation in tokens; the oldest turns are dropped beyond it (0 = the "
                 "model's max_position_embeddings)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  add_sampling_options(app, &a->sampling);
  add_kv_type_option(app, &a->kv_type);
  add_numerics_option(app, &a->numerics_name);
  add_draft_options(
      app, &a->draft, &a->draft_vocab,
      "speculative decoding with K MTP drafts per round (same output at temperature 0, "
      "same distribution otherwise); each turn re-runs the conversation");
  app.add_option("-t,--threads", a->threads,
                 "worker threads (0 = one per CPU this process may use)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--upscale", a->upscale,
                 "/image: long-edge upscale factor before tiling (0 = off; default: the model's "
                 "preprocessor_config.json, else 2.0), as generate --upscale")
      ->check(CLI::Range(0.0, 16.0));
  app.add_flag("--no-history", a->no_history,
               "do not read or write the input history ($XDG_STATE_HOME/inkling/chat_history)");
  return [a]() {
    auto numerics = numerics_option(a->numerics_name);
    if (!numerics.ok()) return fail(numerics.status().message(), 2);
    a->numerics = numerics.value();
    auto params = a->sampling.resolved();
    if (!params.ok()) return fail(params.status().message(), 2);
    if (std::string bad = check_model_folder(a->model_dir); !bad.empty()) return fail(bad, 2);
    Chat chat(*a, *params);
    return chat.run();
  };
}

}  // namespace inkling::cli
