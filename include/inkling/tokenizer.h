// Public tokenizer API: byte-level BPE with tiktoken semantics (o200k_base + Inkling control
// tokens), loaded from a Hugging Face tokenizer.json or a tiktoken ranks file; lossy UTF-8
// decoding and a streaming detokenizer. A Tokenizer is immutable after load: every const method
// is thread-safe, so one instance is shared (std::shared_ptr<const Tokenizer>).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inkling/status.h"

namespace inkling {

// An added token (HF `added_tokens`). Matched on the raw text before pre-tokenization,
// leftmost-longest, like HF tokenizers; flags as in HF (all false for Inkling's tokens).
struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = true;       // a control token: encode(allow_special=false) treats it as text
  bool lstrip = false;       // the match also swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // only matches when not inside a word
};

class Tokenizer {
 public:
  // A model folder: tokenizer.json if present; else tiktoken/tokenizer.model, tokenizer.model
  // or the first *.tiktoken file, with added tokens from tokenizer_config.json
  // (`added_tokens_decoder`) or special_tokens.json (`special_tokens`).
  static Result<std::shared_ptr<const Tokenizer>> load(const std::string& model_dir);
  // A tiktoken ranks file (`<base64 bytes> <rank>` per line) plus added tokens. Lines whose
  // rank is an added token's id must hold that token's text and are not mergeable.
  // `pattern` empty = the o200k pre-tokenizer regex.
  static Result<std::shared_ptr<const Tokenizer>> load_tiktoken(const std::string& ranks_path,
                                                                std::vector<AddedToken> specials,
                                                                const std::string& pattern = "");
  // A Hugging Face tokenizer.json: BPE model (vocab + merges in rank order, i.e. converted
  // from tiktoken), no normalizer, Split(regex, Isolated) + ByteLevel pre-tokenizer.
  static Result<std::shared_ptr<const Tokenizer>> load_hf_json(const std::string& path);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Text -> ids. Added tokens are split out first (with allow_special=false, tokens flagged
  // special are encoded as ordinary text, like tiktoken's encode_ordinary). No BOS is added.
  // Invalid UTF-8 in `text` is first replaced with U+FFFD per maximal invalid subpart (what
  // Python's bytes.decode("utf-8", "replace") does; tiktoken likewise replaces lone
  // surrogates with U+FFFD), so encode never fails.
  std::vector<int32_t> encode(std::string_view text, bool allow_special = true) const;
  // Like encode, but invalid UTF-8 is an error naming the byte offset (HF tokenizers cannot
  // receive such input at all: Python refuses to build the str).
  Result<std::vector<int32_t>> encode_checked(std::string_view text,
                                              bool allow_special = true) const;

  // Ids -> text: the tokens' bytes concatenated, then UTF-8 decoded with U+FFFD for each
  // maximal invalid subpart (HF / Python errors="replace"). Added tokens decode to their text
  // unless skip_special (then tokens flagged special are dropped). Unknown ids are skipped.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // The raw bytes of one token (may be a partial UTF-8 character); "" for an unknown id.
  std::string token_bytes(int32_t id) const;
  // Id of an added token by its text ("<|content_model_end_sampling|>"), else of an ordinary
  // token whose bytes equal `token`.
  std::optional<int32_t> token_id(std::string_view token) const;
  // 1 + the largest id (ordinary or added): 200058 for Inkling.
  size_t vocab_size() const;
  bool is_special(int32_t id) const;
  bool is_added(int32_t id) const;
  const std::vector<AddedToken>& added_tokens() const;
  // The pre-tokenizer regex in use (as written in the file / tiktoken).
  const std::string& pattern() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenizer for one stream: push ids as they are generated; each call returns
// only complete UTF-8 (a character cut across tokens is held back until completed). The
// concatenation of all push() results and flush() equals decode(all ids). Not thread-safe;
// one per stream.
class StreamDecoder {
 public:
  explicit StreamDecoder(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  // Returns whatever is held back (as U+FFFD when incomplete) and resets the stream.
  std::string flush();

 private:
  std::shared_ptr<const Tokenizer> tok_;
  bool skip_special_;
  std::string pending_;  // at most 3 bytes: an incomplete UTF-8 prefix
};

}  // namespace inkling
