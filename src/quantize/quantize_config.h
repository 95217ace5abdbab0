// The config.json of a quantized folder: the source's config with the text config in the
// original (OG) spelling mlx-vlm reads (intermediate_size = expert width,
// dense_intermediate_size, sconv_kernel_size), wrapped in a top-level InklingConfig when the
// source was a bare transformers text config, and the MLX "quantization" block.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "inkling/status.h"
#include "model/config.h"

namespace inkling::quant {

Result<std::string> output_config(const std::string& source_text, const ModelConfig& c,
                                  const nlohmann::ordered_json& quantization);

}  // namespace inkling::quant
