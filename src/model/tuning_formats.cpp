// Calibration formats of a model (see tuning_formats.h).
#include "model/tuning_formats.h"

namespace inkling {

std::vector<std::string> decode_tuning_formats(const ModelInfo& info) {
  std::vector<std::string> out;
  auto add = [&](const std::string& f) {
    for (const auto& g : out)
      if (g == f) return;
    out.push_back(f);
  };
  for (const ModelInfo::Storage& s : info.storage) {
    const std::string& f = s.format;
    if (f == "BF16" || f == "F32")
      add("bf16");
    else if (f.rfind("affine q4", 0) == 0)
      add("q4");
    else if (f.rfind("affine q8", 0) == 0)
      add("q8");
    else if (f.rfind("affine q", 0) == 0)
      add("q3");
    else if (f == "nvfp4")
      add("nvfp4");
  }
  return out;
}

}  // namespace inkling
