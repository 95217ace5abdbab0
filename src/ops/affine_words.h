// The word-lane layout of MLX affine codes of any width (1..8 bits) for SIMD kernels. MLX packs a
// row as one little-endian bit stream (element c at bits [c * bits, (c + 1) * bits)), so 32
// elements fill exactly `bits` u32 words (a chunk) and a code may straddle two words when bits
// does not divide 32. Kernels load the codes as they lie, N consecutive words per vector, and
// decode "step j" of every lane at once: lane k of vector i holds word w = i * N + k of a block of
// `bits * N` words (N chunks, 32 * N elements); step j extracts that word's j-th element (the j-th
// code starting in it) with a per-lane right shift, joined with the next word's low bits where the
// code straddles. x is permuted once per call into the same (vector, step, lane) order, with zeros
// in the slots of words holding fewer codes, so each decoded vector meets one contiguous x vector.
// When bits divides 32 every lane shifts by j * bits and no slot is empty.
#pragma once

#include <cstdint>
#include <vector>

namespace inkling {

struct AffineWordLayout {
  int bits = 0;            // code width, 1..8
  int lanes = 0;           // N: u32 lanes per vector
  int steps = 0;           // S: codes starting in one word, at most (ceil(32 / bits))
  int64_t slots = 0;       // slots per block: bits * steps * lanes (>= 32 * lanes)
  bool uniform = false;    // 32 % bits == 0: shift j * bits in every lane, no straddling
  uint64_t straddles = 0;  // bit j set: step j straddles into the next word in some lane
  // Per slot (i * steps + j) * lanes + k of a block:
  std::vector<uint32_t> shift;  // right shift of the word's bits (1 for empty slots, j >= 1)
  std::vector<int32_t> column;  // element of the block (0 .. 32 * lanes - 1), -1 = empty slot
  // Per lane i * lanes + k of a block: the chunk (32 elements) its word belongs to.
  std::vector<int32_t> chunk;
};

// The layout for `bits` (1..8) and N = `lanes`; built once per (bits, lanes) and kept.
const AffineWordLayout& affine_word_layout(int bits, int lanes);

// Copies n_tok rows of x (leading dimension ldx, cols columns) into the layout's slot order:
// xp[t * xps + b * slots + s] = x[t * ldx + b * 32 * lanes + column[s]] (0 for empty slots and
// columns past cols). xps >= blocks * slots, blocks = ceil(cols / (32 * lanes)).
void affine_words_permute_x(const AffineWordLayout& L, const float* x, int64_t n_tok, int64_t ldx,
                            int64_t cols, float* xp, int64_t xps);

// Packed (slot) columns of a row of `cols` elements: whole blocks, the last one padded.
inline int64_t affine_words_packed_cols(const AffineWordLayout& L, int64_t cols) {
  const int64_t per = 32 * int64_t(L.lanes);
  return (cols + per - 1) / per * L.slots;
}

}  // namespace inkling
