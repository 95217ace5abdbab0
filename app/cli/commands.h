// Subcommands of the `inkling` tool. Each add_* registers its options on the app and returns a
// runner; runners return the process exit code (0 ok, 1 runtime error, 2 bad input/usage).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace inkling::cli {

using Runner = std::function<int()>;

Runner add_inspect(CLI::App& app);
Runner add_generate(CLI::App& app);
Runner add_tokenize(CLI::App& app);
Runner add_detokenize(CLI::App& app);
Runner add_render(CLI::App& app);
Runner add_chat(CLI::App& app);
Runner add_serve(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_quantize(CLI::App& app);
Runner add_tune(CLI::App& app);

// Prints "error: <message>" to stderr and returns `code`.
int fail(const std::string& message, int code = 1);

}  // namespace inkling::cli
