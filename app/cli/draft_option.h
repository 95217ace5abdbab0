// --draft K and --draft-vocab N: speculative decoding with the model's MTP depths, the same
// options on every command that decodes (generate, chat, serve, bench). `what` says what --draft
// does for that command.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace inkling::cli {

inline void add_draft_options(CLI::App& app, int* draft, int64_t* draft_vocab,
                              const std::string& what) {
  app.add_option("--draft", *draft, what)->check(CLI::Range(0, 64));
  app.add_option("--draft-vocab", *draft_vocab,
                 "with --draft: the draft head scores only token ids [0, N) (cheaper drafts on "
                 "large vocabularies; the output is unchanged); 0 = every id")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 30));
}

}  // namespace inkling::cli
