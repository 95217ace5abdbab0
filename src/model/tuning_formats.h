// The decode-calibration formats (ops/tune_calibrate.h) a loaded model's weights need, from its
// storage summary: "BF16"/"F32" -> bf16, "affine q4/..." -> q4, "affine q8/..." -> q8, the other
// affine widths -> q3, "nvfp4" -> nvfp4. Used by `inkling tune -m` and the first-use calibration.
#pragma once

#include <string>
#include <vector>

#include "inkling/engine.h"

namespace inkling {

std::vector<std::string> decode_tuning_formats(const ModelInfo& info);

}  // namespace inkling
