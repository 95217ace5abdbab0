// The unit of work of `inkling quantize`: one output item (a module's 1 or 3 tensors, a small
// tensor, an MTP tensor) bound to its source, and the streaming producer that writes it into a
// shard chunk by chunk.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/safetensors_writer.h"
#include "base/thread_pool.h"
#include "quantize/imatrix.h"
#include "quantize/quantize_plan.h"
#include "quantize/quantize_sources.h"

namespace inkling::quant {

struct Job {
  const Module* module = nullptr;  // a matrix, quantized or kept as floats
  RowSource rows;                  // its source rows
  const SmallTensor* small = nullptr;
  const TensorRef* ref = nullptr;              // the small tensor's source (null: generated ones)
  const TensorInfo* raw = nullptr;             // an MTP tensor copied as stored
  const std::vector<float>* values = nullptr;  // a small tensor binding assembled (F32)
  std::vector<TensorDecl> decls;               // the output tensors, in file order
  uint64_t bytes = 0;
  // Quantized modules: choose each group's scale and bias by the weighted error search
  // (quantize/weighted_affine.h) instead of mx.quantize's min/max rule, weighing column c of
  // logical row r by weights[(r / rows_per_weight) * cols + c] (empty: every column alike).
  bool search = false;
  std::vector<float> weights;
  int64_t rows_per_weight = 0;
};

// Sets every quantized module's search (and, where the importance matrix covers it, weights):
// mean x^2 per column, an expert that saw no tokens taking the mean of its module's experts
// that did, plus a floor of kImportanceFloor times the row's mean so no column is ignored.
inline constexpr float kImportanceFloor = 0.01f;

// One job per plan item (plus, when keep_mtp, the MTP tensors the plan does not write, copied as
// stored), sources bound and dtypes decided:
// module floats/scales take `dtype` or else the source's; small tensors stay as stored. Sets the
// plan's dtypes so its size table matches what is written.
Result<std::vector<Job>> make_jobs(const Source& src, Plan& plan, std::optional<DType> dtype,
                                   bool keep_mtp);

void attach_importance(std::vector<Job>& jobs, const Imatrix* imatrix);

// Rows [r0, r0 + n) of a module job encoded as they are written: quantized (codes, scales and
// biases rows of affine_code_bytes / affine_scale_bytes each) or converted to the module's float
// dtype (codes only), by the pool. Returns the first row holding a NaN or infinity, else -1.
int64_t encode_rows(const Job& j, int64_t r0, int64_t n, uint8_t* codes, uint8_t* scales,
                    uint8_t* biases, ThreadPool& pool);
// The error for a row encode_rows() found bad, naming the module, the row and its expert.
Status bad_row_error(const Module& m, int64_t row);

// What a producer reports as it goes: bytes written and tensors finished.
using ProgressFn = std::function<void(uint64_t bytes, int64_t tensors)>;

// Writes job `j` into `w`, whose tensors [first, first + j.decls.size()) are the job's. Checks
// `stop` between chunks and returns early (without error) when it is set.
Status write_job(const Job& j, SafetensorsWriter& w, size_t first, ThreadPool& pool,
                 const std::atomic<bool>& stop, const ProgressFn& progress);

}  // namespace inkling::quant
