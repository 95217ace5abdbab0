// Shell-style name patterns: `*` matches any run of characters (dots included), `?` one
// character. Used for per-module quantization overrides, read (quant_config) and written
// (`inkling quantize --override`).
#pragma once

namespace inkling {

bool glob_match(const char* pattern, const char* text);

}  // namespace inkling
