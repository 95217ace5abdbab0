// -m/--model validation (see model_path.h).
#include "model_path.h"

#include <filesystem>

namespace inkling::cli {

namespace {

bool has_suffix(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string check_model_folder(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return "'" + path + "': no such model folder";
  if (fs::is_directory(st)) return "";
  const std::string parent = fs::path(path).parent_path().string();
  const std::string folder = parent.empty() ? "." : parent;
  if (has_suffix(path, ".gguf"))
    return "'" + path +
           "' is a GGUF file: GGUF is not supported. inkling loads model folders with "
           "config.json and .safetensors weights (Hugging Face transformers, the original "
           "checkpoints, NVFP4 or MLX quantized); give such a folder";
  if (has_suffix(path, ".safetensors") || has_suffix(path, ".json") ||
      has_suffix(path, ".safetensors.index.json"))
    return "'" + path + "' is a file; -m takes the model folder that holds it: -m " + folder;
  return "'" + path + "' is a file; -m takes a model folder (config.json + .safetensors)";
}

}  // namespace inkling::cli
