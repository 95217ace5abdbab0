// Byte-pair encoding of one pre-tokenized piece with tiktoken semantics: whole-piece lookup
// first, else start from single bytes and repeatedly merge the adjacent pair whose
// concatenation has the lowest rank (leftmost on ties) until no pair is in the vocabulary.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/tokenizer/rank_map.h"

namespace inkling::tok {

// Reusable buffers so encoding a text allocates nothing per piece.
struct BpeScratch {
  std::vector<uint32_t> start;
  std::vector<int32_t> rank;
  std::vector<uint32_t> next, prev;
  std::vector<uint64_t> heap;
};

// Appends the ids of `piece` to `out`. Every single byte must be in `ranks` (checked at load).
void bpe_encode(std::string_view piece, const RankMap& ranks, BpeScratch* scratch,
                std::vector<int32_t>* out);

}  // namespace inkling::tok
