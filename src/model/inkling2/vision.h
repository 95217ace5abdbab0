// Inkling 2's vision tower (spec/inkling2.md section 6.3, transformers' Inkling2VisionModel): a
// ViT over 20 x 20 native patches emitted in 2 x 2-merge order, a class token, a learned position
// table resampled bilinearly to the image's patch grid, interleaved 2-D axial RoPE, pre-norm
// layers with layer scale, then the 2 x 2 merge and a two-layer GELU projector: one row of the
// text hidden size per 40 x 40 tile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "inkling/numerics.h"
#include "model/layouts.h"
#include "ops/weight_view.h"

namespace inkling {

// vision_config of an inkling2 / inkling2_loop config.json (Inkling2VisionConfig's defaults).
struct VitConfig {
  int hidden = 1024, heads = 16, layers = 23, intermediate = 4096;
  int patch = 20, merge = 2, grid = 32, proj_hidden = 4096, channels = 3;
  double eps = 1e-5, rope_theta = 10000.0;
  bool projector_bias = false;
  int text_hidden = 0;  // text_hidden_size: must equal the text model's hidden size
  int tile() const { return patch * merge; }
};

struct VitLayer {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b, lambda1, lambda2;  // [D]
  MatView q, k, v, o, fc1, fc2;                                     // [D, D] x4, [F, D], [D, F]
  std::vector<float> q_b, k_b, v_b, o_b, fc1_b, fc2_b;
};

struct VitWeights {
  MatView patch_embed;                    // [D, C * patch^2], input order (ph, pw, c)
  std::vector<float> pos_table;           // [grid^2, D]
  std::vector<float> cls;                 // [D] class_embedding + cls_position_embedding
  std::vector<float> ln_pre_w, ln_pre_b;  // [D]
  std::vector<VitLayer> layers;
  MatView proj1, proj2;                 // [P, merge^2 D], [H, P]
  std::vector<float> proj1_b, proj2_b;  // empty without projector_bias
  // Fast: attention's keys and values are rounded to bf16 once per image and scored with the
  // bf16 kernels (as a bf16 reference's attention); exact: f32 products.
  Numerics numerics = Numerics::kExact;
};

// Binds the tower from the original (model.visual.backbone.*, model.visual.proj_in/out) or
// transformers' (model.vision_tower.*) names. Returns "" or the message saying what is wrong;
// `bound` gets the checkpoint names read.
std::string bind_vit(const VitConfig& vc, const TensorMap& m, int text_hidden, VitWeights* w,
                     std::vector<std::string>* bound);

// One image: pixel_values [rows * cols, tile, tile, C] (tiles row-major) -> out [rows * cols, H]
// (H = proj2's rows, the text hidden size).
void vit_forward(const VitConfig& vc, const VitWeights& w, const float* pixel_values, int64_t rows,
                 int64_t cols, float* out, ThreadPool* pool);

}  // namespace inkling
