// populate_weight_pages (model/weight_residency.h).
#include "model/weight_residency.h"

#include <cstring>
#include <utility>
#include <vector>

#include "base/cpus.h"
#include "base/mapped_file.h"
#include "base/resident.h"

namespace inkling {

uint64_t populate_weight_pages(const Weights& w, int threads) {
  std::vector<std::pair<const void*, size_t>> ranges;
  auto add = [&](const uint8_t* p, size_t n) {
    if (p && n > 0 && locate_mapped(p)) ranges.emplace_back(p, n);
  };
  for_each_matrix(w, [&](const char* group, const std::string&, const MatView& v) {
    if (std::strcmp(group, "embed") == 0 || v.tiles || v.rows <= 0) return;
    // Rows [0, rows): from the first row's start to the last row's end (interleaved halves
    // cover their partner's rows too, which are weights as well).
    const bool dense = v.format == WeightFormat::kDense;
    const size_t row_bytes =
        dense ? size_t(v.cols) * dtype_size(v.dtype) : size_t((v.cols * v.bits + 7) / 8);
    add(v.row(0), size_t(v.row(v.rows - 1) - v.row(0)) + row_bytes);
    if (dense || v.group <= 0) return;
    const size_t es = dtype_size(v.scale_dtype);
    const size_t side = (size_t((v.rows - 1) * v.scale_stride) + size_t(v.cols / v.group)) * es;
    add(v.scales, side);
    add(v.biases, side);
  });
  const int nt = threads > 0 ? threads : available_cpus();
  return populate(std::move(ranges), nt);
}

}  // namespace inkling
