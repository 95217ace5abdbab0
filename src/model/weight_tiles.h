// Load-time tiles: in fast numerics, the matrices whose kernels read weights regrouped 16 rows at
// a time (affine 4-bit on AVX512-VNNI CPUs: ops/quant_q4_int8_gemm.h) get that regrouping once, at
// load, instead of on every product. The copy is as large as those matrices' codes and scales
// (the checkpoint's own pages are no longer read for them and the kernel may drop them); it is
// skipped, and the kernels that read the checkpoint as stored run, where it would not fit in the
// memory available or INKLING_NO_Q4_TILES=1 is set.
#pragma once

#include "inkling/numerics.h"
#include "model/weights.h"

namespace inkling {

// Drops any tiles w holds, then (fast numerics) builds them for every matrix that takes them
// except the embedding (row lookups only), one copy per stored matrix, on up to `threads` threads,
// and points the views at them. Call before binding the kernels for `n`.
void prepare_weight_tiles(Weights& w, Numerics n, int threads = 0);

}  // namespace inkling
