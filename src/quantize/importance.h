// Calibration statistics of every weight's inputs: an ImportanceCollector installed with
// ProductObserverScope (ops/matmul.h) on the thread that runs the model sees each product's
// input rows and adds, per input column, the sum of x^2 and the number of rows (tokens) it saw.
// Routed experts' products see only the tokens routed to them. Weights are keyed by the file
// position of their first byte (locate_mapped), so another load of the same checkpoint in the
// process (the quantizer's own) finds its views' statistics with find().
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "ops/matmul.h"

namespace inkling {

struct ProductStats {
  int64_t rows = 0, cols = 0;
  uint64_t row_bytes = 0;      // distance between the weight's rows in the file
  std::vector<double> sum_x2;  // [cols]
  int64_t tokens = 0;          // input rows seen (summed over calls)
};

class ImportanceCollector final : public ProductObserver {
 public:
  void on_product(const MatView& w, const float* x, int64_t n_tok, int64_t ldx) override;

  // The statistics of the product whose weight holds view v: the same first byte, or v's rows a
  // subset of its rows (a gate or up half of a fused matrix the forward pass ran as one), with
  // the same columns. Null when no product read those rows (v not from a file mapping, or
  // never run: an embedding, an expert no token reached).
  const ProductStats* find(const MatView& v) const;

 private:
  std::map<FileSpot, ProductStats> stats_;
  std::unordered_map<const uint8_t*, ProductStats*> by_ptr_;  // this load's views, resolved once
};

// Bytes between consecutive rows of a view (dense: elements x dtype size; packed: row_stride).
uint64_t view_row_bytes(const MatView& v);

}  // namespace inkling
