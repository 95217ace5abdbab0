// Tokenizer::Impl: the immutable tables behind the public Tokenizer (token bytes by id, the
// rank map, added tokens and their matcher, the pre-tokenizer), and VocabBuilder, which the
// loaders fill and which validates everything once before an Impl exists.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inkling/status.h"
#include "inkling/tokenizer.h"
#include "text/tokenizer/pretokenizer.h"
#include "text/tokenizer/rank_map.h"

namespace inkling {

namespace tok {

// Leftmost-longest search over the added tokens' texts (HF uses Aho-Corasick LeftmostLongest).
class AddedMatcher {
 public:
  void build(const std::vector<AddedToken>& tokens);
  // First match at or after `pos`: its offset and index into the token list.
  bool find(std::string_view text, size_t pos, size_t* begin, size_t* index) const;

 private:
  const std::vector<AddedToken>* tokens_ = nullptr;
  std::array<std::vector<uint32_t>, 256> by_first_;  // token indices, longest first
  int single_first_ = -1;  // the one first byte all tokens share, else -1 (memchr fast path)
};

// Collects a vocabulary from a file, then validates it into an Impl.
struct VocabBuilder {
  std::string source;                                // file name, for error messages
  std::string arena;                                 // ordinary token bytes, back to back
  std::vector<std::pair<uint32_t, uint32_t>> spans;  // (offset, length) into arena
  std::vector<int32_t> ids;                          // rank/id of each span
  std::vector<uint32_t> lines;  // source line of each span (ranks files), for messages
  std::vector<AddedToken> added;
  std::string pattern;

  void add_ordinary(std::string_view bytes, int32_t id) {
    spans.emplace_back(static_cast<uint32_t>(arena.size()), static_cast<uint32_t>(bytes.size()));
    arena.append(bytes);
    ids.push_back(id);
  }
};

}  // namespace tok

struct Tokenizer::Impl {
  static constexpr int32_t kMaxId = 1 << 24;  // guards allocations against garbage ids

  std::string arena;  // ordinary token bytes (RankMap keys point here), then added tokens'
  std::vector<std::pair<uint32_t, uint32_t>> by_id;  // id -> (offset, length); kNoToken if none
  std::vector<uint8_t> flags;                        // id -> kAdded | kSpecial
  tok::RankMap ranks;                                // ordinary bytes -> id
  std::vector<AddedToken> added;
  tok::AddedMatcher matcher;
  std::unordered_map<std::string, int32_t> added_ids;  // content -> id
  std::unique_ptr<tok::Pretokenizer> pre;

  static constexpr uint32_t kNoToken = UINT32_MAX;
  static constexpr uint8_t kAdded = 1, kSpecial = 2;

  // Validates the builder's contents (ids in range and unique, all 256 bytes present, added
  // tokens consistent) and compiles the pattern.
  static Result<std::unique_ptr<Impl>> build(tok::VocabBuilder&& b);

  // Encodes valid UTF-8.
  void encode_valid(std::string_view text, bool allow_special, std::vector<int32_t>* out) const;
  void encode_ordinary(std::string_view text, std::vector<int32_t>* out) const;
  std::string_view bytes_of(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= by_id.size()) return {};
    const auto [off, len] = by_id[id];
    if (len == kNoToken) return {};
    return std::string_view(arena).substr(off, len);
  }
};

}  // namespace inkling
