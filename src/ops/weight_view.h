// The weight matrix view every kernel reads: the floor of the ops layer (it depends on base/dtype.h
// only). A view points into the mapped checkpoint in its stored format and carries the kernels
// chosen for it once, at bind time, by the format registry (ops/formats.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace inkling {

// Storage family of a weight matrix. The forward pass never branches on the checkpoint layout,
// only on this: plain floats, MLX affine groups, NVFP4 blocks or MXFP8 blocks. The registry has
// one entry per concrete format (dense F32/BF16/F16, affine by bit width, NVFP4, MXFP8).
enum class WeightFormat : uint8_t {
  kDense,   // dtype F32/BF16/F16 elements
  kAffine,  // MLX affine: packed unsigned `bits`-bit codes in U32 words (low bits = first
            // element); w = scale * q + bias per group of `group` columns
  kNvfp4,   // ModelOpt NVFP4: U8 bytes of two E2M1 codes (low nibble first); w = e2m1 *
            // (e4m3 block scale of 16 columns * scale2)
  kMxfp8,   // OCP MXFP8: one E4M3 byte per element; w = e4m3 * 2^(e8m0 - 127), one U8 (E8M0)
            // exponent per block of 32 columns (Inkling 2's experts)
};

struct KernelSet;  // ops/formats.h: the kernels the registry bound to a view

// A row-major matrix view: `rows` x `cols` logical elements. Dense: columns contiguous, rows
// `row_stride` elements of `dtype` apart. Quantized: `data` rows hold packed codes `row_stride`
// bytes apart; `scales` (and `biases` for affine) rows are `scale_stride` elements apart.
struct MatView {
  DType dtype = DType::F32;
  const uint8_t* data = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0;
  WeightFormat format = WeightFormat::kDense;
  const uint8_t* scales = nullptr;  // affine: scale_dtype [rows, cols/group]; nvfp4: e4m3;
                                    // mxfp8: U8 e8m0 exponents
  const uint8_t* biases = nullptr;  // affine only, scale_dtype
  DType scale_dtype = DType::BF16;
  int64_t scale_stride = 0;  // elements between rows of scales/biases
  int bits = 0, group = 0;   // affine: bits, group 32/64/128; nvfp4: 4, 16; mxfp8: 8, 32
  float scale2 = 1.f;        // nvfp4 per-tensor (per-expert) scale
  // Set by bind_kernels() (ops/formats.h). Null on views made by hand (tests): matmul() then
  // asks the registry on every call. Row slices and joined halves keep it (the choice depends
  // on the format, its parameters and the columns only); column slices clear it.
  const KernelSet* kernels = nullptr;
  // Load-time tiles (fast numerics, ops/quant_q4_int8_gemm.h q4_int8_pack_tiles): rows [0, rows)
  // regrouped 16 at a time, `tile_stride` bytes per tile, owned by the weights. Null elsewhere.
  // Row slices that start on a tile keep them; other slices, column slices and joined halves
  // whose tiles are not one run drop them (the kernel then regroups per call: the same bits).
  const uint8_t* tiles = nullptr;
  int64_t tile_stride = 0;

  const uint8_t* row(int64_t r) const {
    return format == WeightFormat::kDense ? data + size_t(r * row_stride) * dtype_size(dtype)
                                          : data + size_t(r * row_stride);
  }
  // Rows [begin, begin + n) as a view of their own.
  MatView slice_rows(int64_t begin, int64_t n) const {
    MatView v = *this;
    v.data = row(begin);
    v.rows = n;
    if (scales) v.scales = scales + size_t(begin * scale_stride) * dtype_size(scale_dtype);
    if (biases) v.biases = biases + size_t(begin * scale_stride) * dtype_size(scale_dtype);
    if (tiles) v.tiles = begin % 16 == 0 ? tiles + (begin / 16) * tile_stride : nullptr;
    return v;
  }
};

// If a and b are the two halves of one stored matrix (a fused gate/up tensor), sets *whole to
// that matrix (2 * a.rows rows, one read stream instead of two) and returns true: rows
// interleaved (a = even rows, b = odd rows; *interleaved = true) or stacked (b's rows follow a's).
// Decided from pointers and strides alone, so it holds for any two views it accepts.
bool join_halves(const MatView& a, const MatView& b, MatView* whole, bool* interleaved);

}  // namespace inkling
