// Text subcommands that need only the tokenizer files of a model folder (no config or weights):
// `inkling tokenize` (text -> ids), `inkling detokenize` (ids -> text), whole input or --jsonl,
// and `inkling render` (OpenAI chat request -> the prompt the chat template renders, or its ids).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "inkling/chat.h"
#include "inkling/tokenizer.h"

namespace inkling::cli {

namespace {

struct TextArgs {
  std::string model_dir;
  bool jsonl = false;
  bool no_special = false;    // tokenize: special-token text is encoded as plain text
  bool skip_special = false;  // detokenize: drop special tokens
  bool ids = false;           // render: print token ids instead of text
};

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

Result<std::vector<int32_t>> ids_from_json(const nlohmann::json& j, size_t line) {
  const std::string where = line ? "line " + std::to_string(line) + ": " : "";
  if (!j.is_array()) return Status::error(where + "expected a JSON array of token ids");
  std::vector<int32_t> ids;
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      return Status::error(where + "not a token id: " + v.dump());
    ids.push_back(int32_t(v.get<int64_t>()));
  }
  return ids;
}

int run_tokenize(const TextArgs& a) {
  auto tok = Tokenizer::load(a.model_dir);
  if (!tok.ok()) return fail(tok.status().message());
  const std::string in = read_stdin();
  if (!a.jsonl) {
    auto ids = tok.value()->encode_checked(in, !a.no_special);
    if (!ids.ok()) return fail(ids.status().message(), 2);
    std::printf("%s\n", nlohmann::json(ids.value()).dump().c_str());
    return 0;
  }
  std::istringstream lines(in);
  std::string line;
  for (size_t n = 1; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_string())
      return fail("line " + std::to_string(n) + ": expected a JSON string", 2);
    auto ids = tok.value()->encode_checked(j.get<std::string>(), !a.no_special);
    if (!ids.ok()) return fail("line " + std::to_string(n) + ": " + ids.status().message(), 2);
    std::printf("%s\n", nlohmann::json(ids.value()).dump().c_str());
  }
  return 0;
}

int run_detokenize(const TextArgs& a) {
  auto tok = Tokenizer::load(a.model_dir);
  if (!tok.ok()) return fail(tok.status().message());
  const std::string in = read_stdin();
  using nlohmann::json;
  if (!a.jsonl) {
    auto j = json::parse(in, nullptr, false);
    if (j.is_discarded()) return fail("input is not JSON: expected an array of token ids", 2);
    auto ids = ids_from_json(j, 0);
    if (!ids.ok()) return fail(ids.status().message(), 2);
    const std::string text = tok.value()->decode(ids.value(), a.skip_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::istringstream lines(in);
  std::string line;
  for (size_t n = 1; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return fail("line " + std::to_string(n) + ": not JSON", 2);
    auto ids = ids_from_json(j, n);
    if (!ids.ok()) return fail(ids.status().message(), 2);
    // Lossy UTF-8 decoding guarantees valid UTF-8, so dump() cannot throw.
    std::printf("%s\n", json(tok.value()->decode(ids.value(), a.skip_special)).dump().c_str());
  }
  return 0;
}

int run_render(const TextArgs& a) {
  auto tmpl = ChatTemplate::load(a.model_dir);
  if (!tmpl.ok()) return fail(tmpl.status().message());
  // ordered_json keeps the request's key order, as Python dicts do.
  auto request = nlohmann::ordered_json::parse(read_stdin(), nullptr, false);
  if (request.is_discarded()) return fail("request is not valid JSON", 2);
  auto prompt = tmpl->render(request);
  if (!prompt.ok()) return fail(prompt.status().message(), 2);
  if (!a.ids) {
    std::fwrite(prompt->data(), 1, prompt->size(), stdout);
    return 0;
  }
  auto tok = Tokenizer::load(a.model_dir);
  if (!tok.ok()) return fail(tok.status().message());
  std::printf("%s\n", nlohmann::json(tok.value()->encode(prompt.value())).dump().c_str());
  return 0;
}

}  // namespace

Runner add_render(CLI::App& app) {
  auto a = std::make_shared<TextArgs>();
  app.add_option("-m,--model", a->model_dir, "model or tokenizer folder with a chat template")
      ->required();
  app.add_flag("--ids", a->ids, "print the prompt's token ids instead of its text");
  return [a]() { return run_render(*a); };
}

Runner add_tokenize(CLI::App& app) {
  auto a = std::make_shared<TextArgs>();
  app.add_option("-m,--model", a->model_dir, "model or tokenizer folder")->required();
  app.add_flag("--jsonl", a->jsonl, "each input line is a JSON string; one id array per line");
  app.add_flag("--no-special", a->no_special, "encode special-token text as ordinary text");
  return [a]() { return run_tokenize(*a); };
}

Runner add_detokenize(CLI::App& app) {
  auto a = std::make_shared<TextArgs>();
  app.add_option("-m,--model", a->model_dir, "model or tokenizer folder")->required();
  app.add_flag("--jsonl", a->jsonl, "each input line is a JSON id array; one JSON string per line");
  app.add_flag("--skip-special", a->skip_special, "drop special tokens from the text");
  return [a]() { return run_detokenize(*a); };
}

}  // namespace inkling::cli
