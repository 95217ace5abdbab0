// The module and small-tensor lists `inkling quantize` writes, one function per model family,
// and the builder they share. Derived from the config alone (the dry run needs no weights).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "quantize/quantize_plan.h"

namespace inkling::quant {

// Appends plan items in file order; `layer` tags the modules that follow.
struct LayoutBuilder {
  std::vector<PlanItem> items;
  int layer = -1;

  Module& mod(const std::string& path, Group g, Role role, int64_t n, int64_t rows, int64_t cols,
              int64_t split = 0) {
    Module m;
    m.path = path;
    m.group = g;
    m.role = role;
    m.layer = layer;
    m.n = n;
    m.rows = rows;
    m.cols = cols;
    m.split = split;
    items.emplace_back(std::move(m));
    return std::get<Module>(items.back());
  }
  // `source` is the canonical (sanitized) name; empty: generated ones (F32).
  void small(const std::string& name, const std::string& source, std::vector<int64_t> shape,
             bool f32 = false) {
    SmallTensor t{name, source, std::move(shape), f32};
    if (f32) t.dtype = DType::F32;
    items.emplace_back(std::move(t));
  }
};

// Inkling v1 as mlx-vlm lays it out (language_model.model.*), plus the MTP depths when `mtp`.
std::vector<PlanItem> layout_inkling(const ModelConfig& c, bool mtp);
// Inkling 2 under transformers' names (model.*), routed experts stacked as mlx-lm's SwitchGLU
// (mlp.switch_mlp.{gate,up,down}_proj).
std::vector<PlanItem> layout_inkling2(const ModelConfig& c);

}  // namespace inkling::quant
