// The source checkpoint of `inkling quantize`, opened through the engine's own loading pipeline
// (config, safetensors store, sanitize, quantization config, bind_weights), so every layout the
// engine loads is a source and its matrices decode exactly as the engine runs them. A module of
// the plan becomes a RowSource: its logical rows gathered from the bound views.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/safetensors.h"
#include "model/config.h"
#include "model/layouts.h"
#include "model/quant_config.h"
#include "model/weights.h"
#include "quantize/quantize_plan.h"

namespace inkling::quant {

struct Source {
  std::string dir;
  std::string config_text;  // config.json as found
  ModelConfig config;
  TensorStore store;
  std::optional<TensorStore> mtp_store;  // mtp.safetensors when the index does not list it
  TensorMap tensors;                     // canonical names (sanitize)
  std::string layout;
  QuantConfig quant;
  Weights weights;
  // Multi-token-prediction tensors (model.mtp.* / mtp.*) as stored: copied (--mtp keep), or, with
  // --mtp quantize, also bound (tensors gets their canonical "mtp.<d>." names, weights.mtp the
  // depths) and rewritten by the plan.
  std::vector<const TensorInfo*> mtp;
  bool mtp_quantized = false;      // some MTP tensor has quantization scales (a quantize output)
  std::vector<std::string> files;  // every safetensors file read (for the resume signature)

  // Fails with the engine's own message ("[load] ...", "[config] ...") for a bad source.
  // `bind_mtp`: bind the MTP depths too (an error when the source has none). Depths stored
  // quantized are bound in any case (their specs must reach the output's config.json).
  static Result<std::unique_ptr<Source>> open(const std::string& dir, bool bind_mtp = false);
};

// The rows of one module's logical matrix [total_rows, cols], gathered from source views:
// bands of rows, each made of one or more views side by side (a flattened shared down_proj).
class RowSource {
 public:
  struct Part {
    MatView view;
    int64_t col0 = 0;
  };
  struct Band {
    int64_t row0 = 0, rows = 0;
    std::vector<Part> parts;
  };

  int64_t cols() const { return cols_; }
  // Row r as f32, decoded by the format registry exactly as the engine reads it.
  void row(int64_t r, float* out) const;
  // True when every part is already MLX affine at `spec` with scales of scale_dtype on group
  // boundaries: rows can then be copied byte for byte (no requantization loss).
  bool copyable(const QuantSpec& spec, DType scale_dtype) const;
  void copy_row(int64_t r, const QuantSpec& spec, DType scale_dtype, uint8_t* codes,
                uint8_t* scales, uint8_t* biases) const;
  // MLX affine at the source's bits / group when every part is stored so, else float.
  QuantSpec stored_spec() const;
  // The float dtype the source implies for the output: dense dtype, affine scale dtype, BF16
  // for NVFP4.
  DType natural_dtype() const;
  // Drops the mapped source pages of rows [r0, r1) from this process (they stay in the page
  // cache), so memory stays bounded however large the checkpoint.
  void release(int64_t r0, int64_t r1) const;

  static Result<RowSource> of(const Source& src, const Module& m);
  const std::vector<Band>& bands() const { return bands_; }

 private:
  static Result<RowSource> of_inkling2(const Source& src, const Module& m);
  void append(const MatView& v);  // a band of v's rows below the last
  const Band& band_of(int64_t r) const;
  Result<RowSource> checked(const Module& m) &&;
  std::vector<Band> bands_;
  int64_t cols_ = 0;
};

// Drops the pages of [p, p + n) from this process's mapping of a read-only file.
void release_pages(const void* p, size_t n);

}  // namespace inkling::quant
