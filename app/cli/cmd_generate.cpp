// `inkling generate`: prompt (token ids) -> sampled continuation through the library's sampler
// chain (penalties, logit bias, logprobs), with timings, optional JSON output and a dump of the
// teacher-forced prompt logits (.npy).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "activation_dump.h"
#include "base/npy.h"
#include "commands.h"
#include "draft_option.h"
#include "expert_parallel_option.h"
#include "inkling/engine.h"
#include "inkling/grammar.h"
#include "inkling/sampler.h"
#include "inkling/speculative.h"
#include "inkling/tokenizer.h"
#include "kv_option.h"
#include "media_attach.h"
#include "model_path.h"
#include "numerics_option.h"
#include "sampling_options.h"
#include "speculative_json.h"
#include "terminal.h"

namespace inkling::cli {

namespace {

struct GenerateArgs {
  std::string model_dir, token_ids, prompt, prompt_file, dump_logits, dump_activations;
  std::string json_schema, grammar;   // --json-schema FILE / --grammar FILE
  CLI::Option* prompt_opt = nullptr;  // to tell "not given" from "given empty"
  CLI::Option* file_opt = nullptr;
  CLI::Option* ids_opt = nullptr;
  int n_predict = 64;
  int threads = 0;
  int64_t ctx_size = 0;
  int logprobs = -1;        // -1: off; else how many top alternatives to report per token
  int draft = 0;            // --draft K: speculative decoding with K MTP drafts per round (0 = off)
  int64_t draft_vocab = 0;  // --draft-vocab N: the drafts' head covers ids [0, N) (0 = all)
  bool json = false;
  bool special = false;  // print control tokens (<|end_message|>, ...) as text
  KvCacheType kv_type = KvCacheType::kF32;
  std::string numerics = "fast";  // --numerics (numerics_option.h)
  SamplingOptions sampling;
  MediaArgs media;  // --image / --audio / --upscale
  ExpertParallelArgs ep;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string cur;
  auto flush = [&]() -> Status {
    if (cur.empty()) return Status::success();
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(cur, &used);
    } catch (...) {
      used = 0;
    }
    if (used != cur.size() || v < 0 || v > INT32_MAX)
      return Status::error("--token-ids: '" + cur + "' is not a token id");
    ids.push_back(int32_t(v));
    cur.clear();
    return Status::success();
  };
  for (char ch : text) {
    if (ch == ',' || ch == ' ' || ch == '\n' || ch == '\t' || ch == '[' || ch == ']') {
      INK_RETURN_IF_ERROR(flush());
    } else {
      cur += ch;
    }
  }
  INK_RETURN_IF_ERROR(flush());
  if (ids.empty()) return Status::error("--token-ids: no token ids given");
  return ids;
}

Result<std::string> read_text(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(std::string(flag) + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --json-schema / --grammar: the grammar text (a schema is compiled, strictly).
Result<std::string> grammar_text(const GenerateArgs& a) {
  if (!a.grammar.empty()) return read_text(a.grammar, "--grammar");
  auto text = read_text(a.json_schema, "--json-schema");
  if (!text.ok()) return text;
  auto schema = nlohmann::ordered_json::parse(text.value(), nullptr, false);
  if (schema.is_discarded())
    return Status::error("--json-schema: '" + a.json_schema + "' is not valid JSON");
  auto g = json_schema_to_gbnf(schema);
  if (!g.ok())
    return Status::error("--json-schema: " + a.json_schema + ": " + g.status().message());
  return g;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string fmt_logprob(float lp) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", double(lp));
  return buf;
}

// A token for a human: its id and, with a tokenizer, its text quoted as JSON (escapes visible).
std::string describe(const Tokenizer* tok, int32_t id) {
  std::string s = std::to_string(id);
  if (tok)
    s += " " + nlohmann::json(tok->token_bytes(id))
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s;
}

// --logprobs in text mode: one line per generated token on stderr.
void print_logprobs(const Tokenizer* tok, const std::vector<SampledToken>& lps) {
  std::fprintf(stderr, "logprobs (token logprob | top alternatives):\n");
  for (const auto& t : lps) {
    std::string line = describe(tok, t.id) + " " + fmt_logprob(t.logprob);
    for (size_t i = 0; i < t.top.size(); ++i)
      line += (i ? ", " : " | ") + describe(tok, t.top[i].id) + " " + fmt_logprob(t.top[i].logprob);
    std::fprintf(stderr, "  %s\n", line.c_str());
  }
}

// --logprobs with --json: one entry per generated token.
nlohmann::json logprobs_json(const Tokenizer* tok, const std::vector<SampledToken>& lps) {
  auto entry = [&](int32_t id, float lp) {
    nlohmann::json e = {{"id", id}, {"logprob", lp}};
    if (tok) e["token"] = tok->token_bytes(id);
    return e;
  };
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : lps) {
    nlohmann::json e = entry(t.id, t.logprob);
    e["top_logprobs"] = nlohmann::json::array();
    for (const auto& alt : t.top) e["top_logprobs"].push_back(entry(alt.id, alt.logprob));
    out.push_back(std::move(e));
  }
  return out;
}

int run_generate(const GenerateArgs& a) {
  const auto t_start = std::chrono::steady_clock::now();
  auto numerics = numerics_option(a.numerics);
  if (!numerics.ok()) return fail(numerics.status().message(), 2);
  EngineOptions opts;                // first: with --expert-parallel, ranks > 0 only serve experts
  opts.numerics = numerics.value();  // before ep.start: the expert ranks bind kernels with it
  ExpertParallel ep;
  if (auto rc = ep.start(a.ep, a.model_dir, a.threads, &opts)) return *rc;
  const bool from_file = a.file_opt->count() > 0;
  const bool text_prompt = a.prompt_opt->count() > 0 || from_file;
  if (int(a.prompt_opt->count() > 0) + int(from_file) + int(a.ids_opt->count() > 0) != 1)
    return fail(
        "give the prompt as text (-p), as a file (-f) or as --token-ids (exactly one of them)", 2);
  std::string prompt_text = a.prompt;
  if (from_file) {
    std::ifstream f(a.prompt_file, std::ios::binary);
    if (!f) return fail("-f " + a.prompt_file + ": cannot read", 2);
    std::stringstream ss;
    ss << f.rdbuf();
    prompt_text = ss.str();
  }
  if (text_prompt && prompt_text.empty())
    return fail(std::string(from_file ? "-f " + a.prompt_file + ": the file is empty"
                                      : "-p: the prompt is empty") +
                    "; give some text, or the prompt as --token-ids",
                2);
  auto params = a.sampling.resolved();
  if (!params.ok()) return fail(params.status().message(), 2);
  if (std::string bad = check_model_folder(a.model_dir); !bad.empty()) return fail(bad, 2);
  if (a.draft > 0 && (a.logprobs >= 0 || !a.dump_logits.empty() || !a.dump_activations.empty()))
    return fail("--draft: not available with --logprobs, --dump-logits or --dump-activations", 2);
  if (a.draft > 0 && a.media.any()) return fail("--draft: not available with --image/--audio", 2);
  params->logprobs = a.logprobs >= 0;
  params->top_logprobs = std::max(a.logprobs, 0);
  const bool constrained = !a.json_schema.empty() || !a.grammar.empty();
  if (constrained && a.draft > 0) return fail("--draft: not available with a grammar", 2);
  // A tokenizer is optional: with one, text prompts work and the output is also printed as text.
  std::shared_ptr<const Tokenizer> tokenizer;
  if (auto t = Tokenizer::load(a.model_dir); t.ok()) {
    tokenizer = t.value();
  } else if (text_prompt) {
    return fail(t.status().message());
  }
  Result<std::vector<int32_t>> ids =
      !text_prompt ? parse_ids(a.token_ids)
                   : Result<std::vector<int32_t>>(tokenizer->encode(prompt_text));
  if (!ids.ok()) return fail(ids.status().message(), 2);
  if (ids->empty()) return fail("the prompt encodes to no tokens", 2);
  opts.n_threads = a.threads;
  opts.max_context = a.ctx_size;
  opts.kv_type = a.kv_type;
  BusyIndicator busy("loading " + a.model_dir);
  auto engine = Engine::load(a.model_dir, opts);
  busy.done();
  if (!engine.ok()) return fail(engine.status().message());
  Timings timings;
  timings.load_ms = ms_since(t_start);
  timings.seed = params->seed;
  const ModelInfo& info = engine.value()->info();
  if (Status s = check_logit_bias(*params, info.unpadded_vocab); !s) return fail(s.message(), 2);
  PromptMedia media;
  if (a.media.any()) {
    auto pm = attach_media(*engine.value(), ids.value(), a.media, !a.json);
    if (!pm.ok()) return fail(pm.status().message(), 2);
    media = std::move(pm).value();
    ids = media.ids;
  }
  auto session = engine.value()->new_session();
  ActivationDump activations;
  if (!a.dump_activations.empty()) session->set_observer(&activations);

  const auto& prompt = ids.value();
  Sampler sampler(*params);
  sampler.set_prompt(prompt);
  std::shared_ptr<GrammarConstraint> grammar;
  if (constrained) {
    if (!tokenizer) return fail("--json-schema / --grammar need the model's tokenizer files", 2);
    auto text = grammar_text(a);
    if (!text.ok()) return fail(text.status().message(), 2);
    auto g = Grammar::parse(text.value(), tokenizer.get());
    if (!g.ok())
      return fail((a.grammar.empty() ? "--json-schema: " : "--grammar: " + a.grammar + ": ") +
                      g.status().message(),
                  2);
    GrammarConstraintOptions go;
    go.eos_ids = info.eos_ids;
    go.max_tokens = a.n_predict;
    grammar = std::make_shared<GrammarConstraint>(g.value(), VocabIndex::build(*tokenizer), go);
    sampler.attach(grammar);
  }
  std::unique_ptr<SpeculativeDecoder> spec;
  const bool speculate = a.draft > 0 && a.n_predict > 0;
  if (speculate) {
    auto d = SpeculativeDecoder::create(*session, a.draft, a.draft_vocab);
    if (!d.ok()) return fail("--draft: " + d.status().message(), 2);
    spec = std::move(d).value();
  }

  std::vector<int32_t> out;
  std::vector<SampledToken> lps;  // --logprobs
  std::string finish = "length", text;
  std::unique_ptr<StreamDecoder> stream;
  if (tokenizer) stream = std::make_unique<StreamDecoder>(tokenizer, /*skip_special=*/!a.special);
  auto is_eos = [&](int32_t t) {
    return std::find(info.eos_ids.begin(), info.eos_ids.end(), t) != info.eos_ids.end();
  };
  // Appends and prints one generated token; true when generation ends with it.
  auto emit = [&](int32_t tok) {
    out.push_back(tok);
    const bool eos = is_eos(tok);
    if (stream && !eos) {
      const std::string piece = stream->push(tok);
      text += piece;
      if (!a.json) std::fwrite(piece.data(), 1, piece.size(), stdout);
    } else if (!a.json && !stream) {
      std::printf("%d%s", tok, int(out.size()) < a.n_predict ? " " : "");
    }
    if (!a.json) std::fflush(stdout);
    if (eos) finish = "stop";
    return eos || int(out.size()) >= a.n_predict;
  };

  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> last;
  int32_t first = -1;  // speculative: the token start() drew
  if (speculate) {
    auto r = spec->start(prompt, sampler);
    if (!r.ok()) return fail(r.status().message(), 2);
    first = r.value();
  } else if (!a.dump_logits.empty() || !a.dump_activations.empty()) {
    // Every position's logits (and, for the activation dump, its final norm and logits rows).
    Result<std::vector<float>> all = std::vector<float>();
    if (media.media.empty()) {
      all = session->prefill_all_logits(prompt);
    } else if (auto r = prefill_media(*engine.value(), *session, prompt, media.media, &*all);
               !r.ok()) {
      all = r.status();
    }
    if (!all.ok()) return fail(all.status().message(), 2);
    INK_CHECK(all->size() == prompt.size() * size_t(info.unpadded_vocab));
    if (!a.dump_logits.empty())
      if (Status s = write_npy_f32(a.dump_logits, all->data(),
                                   {int64_t(prompt.size()), info.unpadded_vocab});
          !s)
        return fail(s.message());
    last.assign(all->end() - info.unpadded_vocab, all->end());
  } else {
    if (!media.media.empty()) {
      auto r = prefill_media(*engine.value(), *session, prompt, media.media);
      if (!r.ok()) return fail(r.status().message(), 2);
      last.assign(r->begin(), r->end());
    } else {
      // In chunks of the engine's prefill size (the same forward calls as one prefill() call),
      // with a progress bar on a terminal when the prompt is long.
      if (info.max_context > 0 && int64_t(prompt.size()) > info.max_context)
        return fail("the prompt has " + std::to_string(prompt.size()) +
                        " tokens, more than the context (" + std::to_string(info.max_context) +
                        "; -c/--ctx-size sets it)",
                    2);
      ProgressBar bar("prompt", int64_t(prompt.size()), "tokens");
      const size_t chunk = size_t(opts.prefill_chunk);
      for (size_t i = 0; i < prompt.size(); i += chunk) {
        auto r = session->prefill(
            std::span<const int32_t>(prompt).subspan(i, std::min(chunk, prompt.size() - i)));
        if (!r.ok()) return fail(r.status().message(), 2);
        if (i + chunk >= prompt.size()) last.assign(r->begin(), r->end());
        bar.update(int64_t(std::min(prompt.size(), i + chunk)));
      }
    }
  }
  const double prefill_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  // Generation past the context ends like a length limit (the output so far is printed).
  bool context_full = false;
  auto at_limit = [&](int64_t more) {
    if (info.max_context > 0 && session->position() + more > info.max_context) {
      context_full = true;
      return true;
    }
    return false;
  };
  if (speculate) {
    bool done = emit(first);
    while (!done && !at_limit(spec->n_draft() + 1)) {
      auto r = spec->step(sampler);
      if (!r.ok()) return fail(r.status().message());
      for (int32_t tok : r.value())
        if ((done = emit(tok))) break;
    }
  } else {
    std::span<const float> logits(last);
    for (int i = 0; i < a.n_predict; ++i) {
      SampledToken st = sampler.next(logits);
      const int32_t tok = st.id;
      if (params->logprobs) lps.push_back(std::move(st));
      if (emit(tok) || at_limit(1)) break;
      auto r = session->decode(tok);
      if (!r.ok()) return fail(r.status().message());
      logits = r.value();
    }
  }
  const double decode_s = seconds_since(t0);
  if (!a.dump_activations.empty()) {
    std::vector<int32_t> fed = prompt;  // every generated token but the last was fed back
    if (out.size() > 1) fed.insert(fed.end(), out.begin(), out.end() - 1);
    if (Status s = activations.write(a.dump_activations, fed); !s) return fail(s.message());
  }
  if (stream) {
    const std::string rest = stream->flush();
    text += rest;
    if (!a.json) std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  if (context_full && finish == "length" && !a.json)
    std::fprintf(stderr, "\nnote: the context (%lld tokens) is full; generation stopped\n",
                 static_cast<long long>(info.max_context));
  const double prefill_tps = double(prompt.size()) / std::max(prefill_s, 1e-9);
  const size_t steps = out.empty() ? 0 : out.size() - 1;  // forward passes after the prefill
  const double decode_tps = steps ? double(steps) / std::max(decode_s, 1e-9) : 0.0;
  timings.prompt_tokens = int64_t(prompt.size());
  timings.prompt_ms = prefill_s * 1e3;
  timings.gen_tokens = int64_t(steps);  // forward passes after the prefill
  timings.gen_ms = decode_s * 1e3;
  timings.total_ms = ms_since(t_start);
  if (a.json) {
    nlohmann::json j;
    j["prompt_ids"] = prompt;
    j["ids"] = out;
    j["finish_reason"] = finish;
    if (tokenizer) j["text"] = text;
    if (params->logprobs) j["logprobs"] = logprobs_json(tokenizer.get(), lps);
    if (grammar) {
      const GrammarStats& gs = grammar->stats();
      j["grammar"] = {
          {"complete", grammar->complete()},
          {"mask_us_per_token", gs.masks ? 1e6 * gs.mask_seconds / double(gs.masks) : 0}};
    }
    j["numerics"] = info.numerics;
    j["prefill_tok_s"] = prefill_tps;
    j["decode_tok_s"] = decode_tps;
    if (spec) j["speculative"] = speculative_json(spec->stats());
    if (context_full) j["context_full"] = true;
    j["timings"] = timings.json();
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fflush(stdout);
    if (params->logprobs) print_logprobs(tokenizer.get(), lps);
    if (grammar) {
      const GrammarStats& gs = grammar->stats();
      std::fprintf(stderr, "grammar: %s; masking %.1f us/token (%lld steps, %lld trie walks)\n",
                   grammar->complete() ? "complete" : "INCOMPLETE (out of tokens)",
                   gs.masks ? 1e6 * gs.mask_seconds / double(gs.masks) : 0.0,
                   static_cast<long long>(gs.masks), static_cast<long long>(gs.walks));
    }
    std::fprintf(stderr,
                 "prefill: %zu tokens, %.1f tok/s; decode: %zu tokens, %.1f tok/s; finish: %s; "
                 "numerics: %s\n",
                 prompt.size(), prefill_tps, steps, decode_tps, finish.c_str(),
                 info.numerics.c_str());
    std::fputs(timings.text("").c_str(), stderr);
    if (spec) {
      const SpeculativeStats& st = spec->stats();
      std::fprintf(stderr, "speculative: K=%d, %lld rounds, %.2f tokens per round, acceptance",
                   spec->n_draft(), static_cast<long long>(st.rounds), st.tokens_per_round());
      for (size_t i = 0; i < st.drafted.size(); ++i)
        std::fprintf(stderr, " %.3f", st.acceptance(i));
      std::fprintf(stderr, "; time: drafts %.1f ms, verify %.1f ms, acceptance %.1f ms\n",
                   st.draft_seconds * 1e3, st.verify_seconds * 1e3, st.accept_seconds * 1e3);
    }
  }
  return 0;
}

}  // namespace

Runner add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  a->sampling.params.temperature = 0.8f;
  app.add_option("-m,--model", a->model_dir, "model folder")->required();
  a->prompt_opt = app.add_option("-p,--prompt", a->prompt,
                                 "prompt text (needs the model folder's tokenizer files)");
  a->file_opt = app.add_option("-f,--file", a->prompt_file, "read the prompt text from FILE");
  a->ids_opt =
      app.add_option("--token-ids", a->token_ids, "prompt as token ids, e.g. 976,9029,328");
  app.add_option("-n,--n-predict", a->n_predict, "tokens to generate")
      ->check(CLI::Range(0, 1 << 24));
  add_sampling_options(app, &a->sampling);
  app.add_option("-t,--threads", a->threads,
                 "worker threads (0 = one per CPU this process may use)")
      ->check(CLI::Range(0, 1024));
  app.add_option("-c,--ctx-size", a->ctx_size,
                 "longest sequence (prompt + generated); 0 = the model's max_position_embeddings")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  app.add_option("--logprobs", a->logprobs,
                 "report each generated token's logprob and its N most likely alternatives "
                 "(stderr; with --json a \"logprobs\" array)")
      ->check(CLI::Range(0, 20));
  add_kv_type_option(app, &a->kv_type);
  add_numerics_option(app, &a->numerics);
  add_media_options(app, &a->media);
  add_expert_parallel_options(app, &a->ep);
  add_draft_options(app, &a->draft, &a->draft_vocab,
                    "speculative decoding: K draft tokens per round from the model's MTP depths "
                    "(1 <= K <= depths; 0 = off); same output at temperature 0, same distribution "
                    "otherwise");
  auto* schema_opt = app.add_option(
      "--json-schema", a->json_schema,
      "constrain the output to JSON valid against this JSON Schema file (docs/grammar.md)");
  app.add_option("--grammar", a->grammar,
                 "constrain the output to this GBNF-like grammar file (docs/grammar.md)")
      ->excludes(schema_opt);
  app.add_flag("--json", a->json, "print one JSON object with ids, finish reason and speeds");
  app.add_flag("--special", a->special,
               "print control tokens (<|end_message|>, ...) as text; by default they are left out "
               "of the text, as Hugging Face's decode(skip_special_tokens=True) does");
  app.add_option("--dump-logits", a->dump_logits,
                 "write the prompt's teacher-forced logits to this .npy file");
  app.add_option("--dump-activations", a->dump_activations,
                 "write every named activation of the run (prompt and generated tokens fed back) "
                 "as DIR/<name>.npy + manifest.json, named as tools/dump_activations.py names "
                 "the transformers reference's");
  return [a]() { return run_generate(*a); };
}

}  // namespace inkling::cli
