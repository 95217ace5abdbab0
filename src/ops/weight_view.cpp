// View arithmetic: joining the two halves of a fused tensor into one view.
#include "ops/weight_view.h"

namespace inkling {

bool join_halves(const MatView& a, const MatView& b, MatView* whole, bool* interleaved) {
  if (!a.data || a.format != b.format || a.dtype != b.dtype || a.rows != b.rows ||
      a.cols != b.cols || a.row_stride != b.row_stride || a.rows == 0)
    return false;
  const bool quant = a.format != WeightFormat::kDense;
  if (quant && (a.scale_dtype != b.scale_dtype || a.scale_stride != b.scale_stride ||
                a.bits != b.bits || a.group != b.group || a.scale2 != b.scale2 ||
                !a.scales != !b.scales || !a.biases != !b.biases))
    return false;
  const size_t ssz = quant ? dtype_size(a.scale_dtype) : 0;
  // b's first row starts num/den of a's row strides after a's (in codes, scales and biases).
  auto follows = [&](int64_t num, int64_t den) {  // b = a + num / den rows
    if ((a.row_stride * num) % den || (quant && (a.scale_stride * num) % den)) return false;
    const size_t esz = quant ? 1 : dtype_size(a.dtype);
    if (b.data != a.data + size_t(a.row_stride * num / den) * esz) return false;
    if (!quant) return true;
    const size_t soff = size_t(a.scale_stride * num / den) * ssz;
    return b.scales == a.scales + soff && (!a.biases || b.biases == a.biases + soff);
  };
  MatView w = a;
  w.rows = 2 * a.rows;
  if (a.rows > 1 && follows(1, 2)) {  // interleaved halves of a matrix with half the stride
    w.row_stride = a.row_stride / 2;
    w.scale_stride = a.scale_stride / 2;
    *interleaved = true;
  } else if (follows(a.rows, 1)) {
    *interleaved = false;
  } else {
    return false;
  }
  if (w.row_stride < (quant ? w.cols * w.bits / 8 : w.cols)) return false;  // rows would overlap
  // Stacked halves keep their tiles when b's follow a's (a ends on a whole tile).
  const bool tiles_run = a.tiles && !*interleaved && a.rows % 16 == 0 &&
                         b.tiles == a.tiles + (a.rows / 16) * a.tile_stride &&
                         b.tile_stride == a.tile_stride;
  if (!tiles_run) w.tiles = nullptr, w.tile_stride = 0;
  *whole = w;
  return true;
}

}  // namespace inkling
