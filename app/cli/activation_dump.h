// `--dump-activations DIR`: an ActivationObserver that gathers every named activation of a run
// (rows of successive forward passes concatenated) and writes one <name>.npy per tensor plus
// manifest.json ({"ids": tokens fed, "arrays": {name: shape} in execution order}), the layout
// tools/dump_activations.py writes for the transformers reference, so the two folders compare file
// by file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inkling/observer.h"
#include "inkling/status.h"

namespace inkling::cli {

class ActivationDump : public ActivationObserver {
 public:
  void on_tensor(std::string_view name, std::span<const int64_t> shape, const float* data) override;
  void on_ids(std::string_view name, std::span<const int64_t> shape, const int32_t* data) override;
  // Writes every tensor gathered so far into dir (created if missing); `ids`: the tokens whose
  // rows they hold.
  Status write(const std::string& dir, const std::vector<int32_t>& ids) const;

 private:
  struct Tensor {
    std::vector<int64_t> shape;  // first dimension: rows gathered so far
    std::vector<float> f;
    std::vector<int32_t> i;
    bool ids = false;
  };
  Tensor& slot(std::string_view name, std::span<const int64_t> shape, bool ids);
  std::map<std::string, Tensor, std::less<>> tensors_;
  std::vector<std::string> order_;
};

}  // namespace inkling::cli
