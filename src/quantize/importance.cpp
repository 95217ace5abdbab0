// ImportanceCollector: per-column sums of x^2 keyed by file position.
#include "quantize/importance.h"

namespace inkling {

uint64_t view_row_bytes(const MatView& v) {
  return v.format == WeightFormat::kDense ? uint64_t(v.row_stride) * dtype_size(v.dtype)
                                          : uint64_t(v.row_stride);
}

void ImportanceCollector::on_product(const MatView& w, const float* x, int64_t n_tok, int64_t ldx) {
  if (n_tok <= 0 || !w.data) return;
  auto it = by_ptr_.find(w.data);
  ProductStats* st = nullptr;
  if (it != by_ptr_.end()) {
    st = it->second;
  } else {
    const std::optional<FileSpot> spot = locate_mapped(w.data);
    if (!spot) {
      by_ptr_.emplace(w.data, nullptr);
      return;
    }
    ProductStats& s = stats_[*spot];
    if (s.sum_x2.empty()) {
      s.rows = w.rows;
      s.cols = w.cols;
      s.row_bytes = view_row_bytes(w);
      s.sum_x2.assign(size_t(w.cols), 0.0);
    }
    st = s.cols == w.cols ? &s : nullptr;  // the same bytes read with other columns: ignored
    by_ptr_.emplace(w.data, st);
  }
  if (!st) return;
  double* acc = st->sum_x2.data();
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* r = x + t * ldx;
    for (int64_t c = 0; c < w.cols; ++c) acc[c] += double(r[c]) * double(r[c]);
  }
  st->tokens += n_tok;
}

const ProductStats* ImportanceCollector::find(const MatView& v) const {
  const std::optional<FileSpot> spot = locate_mapped(v.data);
  if (!spot) return nullptr;
  auto it = stats_.upper_bound(*spot);  // first key past v's first byte
  // Candidates start at or before v's first byte in the same file; a few steps back suffice
  // (the products overlapping one weight are that weight and its fused whole).
  for (int steps = 0; it != stats_.begin() && steps < 64; ++steps) {
    --it;
    const FileSpot& k = it->first;
    if (k.device != spot->device || k.inode != spot->inode) break;
    const ProductStats& s = it->second;
    const uint64_t d = spot->offset - k.offset;
    if (s.cols != v.cols || s.row_bytes == 0) continue;
    if (d == 0 || (d % s.row_bytes == 0 && d / s.row_bytes < uint64_t(s.rows))) return &s;
  }
  return nullptr;
}

}  // namespace inkling
