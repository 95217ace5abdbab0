// The mapped checkpoint pages the kernels will read, made resident with page tables at load
// (base/resident.h): every matrix's codes, scales and biases, except the embedding (a row per
// token) and the matrices whose load-time tiles replace their stored pages.
#pragma once

#include <cstdint>

#include "model/weights.h"

namespace inkling {

// Returns the bytes populated (0: skipped, see populate()).
uint64_t populate_weight_pages(const Weights& w, int threads = 0);

}  // namespace inkling
