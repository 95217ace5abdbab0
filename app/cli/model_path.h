// The -m/--model value of the commands that load a model, checked before anything loads, with a
// helpful message for a file given instead of a folder (a .safetensors shard, a GGUF file).
#pragma once

#include <string>

namespace inkling::cli {

// "" when `path` is an existing folder, else what is wrong and what to give instead.
std::string check_model_folder(const std::string& path);

}  // namespace inkling::cli
