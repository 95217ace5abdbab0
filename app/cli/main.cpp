// `inkling` command-line entry point: dispatches to the subcommand that was parsed.
#include <cstdio>
#include <map>

#include "commands.h"

namespace inkling::cli {

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return code;
}

}  // namespace inkling::cli

int main(int argc, char** argv) {
  using namespace inkling::cli;
  CLI::App app{"inkling: run Thinking Machines' Inkling models on CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("inkling ") + INKLING_VERSION);
  // Every option's --help line shows its default (subcommands inherit this).
  app.option_defaults()->always_capture_default();
  std::map<CLI::App*, Runner> runners;
  auto reg = [&](const char* name, const char* help, Runner (*add)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = add(*sub);
  };
  reg("inspect", "show the detected layout, config summary and tensors of a model folder",
      add_inspect);
  reg("generate", "generate tokens from a prompt", add_generate);
  reg("chat", "interactive chat in the terminal", add_chat);
  reg("tokenize", "text on stdin -> token ids (JSON)", add_tokenize);
  reg("detokenize", "token ids (JSON) on stdin -> text", add_detokenize);
  reg("render", "chat request (JSON) on stdin -> the prompt its chat template renders", add_render);
  reg("serve", "OpenAI-compatible HTTP server (chat, completions, streaming)", add_serve);
  reg("bench", "prefill/decode tokens per second against this machine's limits", add_bench);
  reg("tune", "measure the decode kernels' settings for this CPU and cache the best", add_tune);
  reg("quantize", "any checkpoint -> MLX affine checkpoint in the mlx-vlm layout", add_quantize);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  for (auto& [sub, run] : runners)
    if (sub->parsed()) return run();
  return 2;
}
