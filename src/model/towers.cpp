// bind_towers(): the vision tower's linears and norms and the audio tower's dMel table, from the
// original (model.visual.layers.linear_i, model.audio.encoder) or transformers' names. The
// vision fold of each layer is read off its input width: in = t_fold * hw_fold^2 * previous
// width, with hw_fold dividing the tile side left and t_fold the time left (spatial folds
// preferred, as plan_out_scales orders them); after the last layer one row per tile remains.
#include <algorithm>

#include "model/tower_tensors.h"
#include "model/towers.h"
#include "ops/formats.h"

namespace inkling {

const TensorRef* find_tower_tensor(const TensorMap& m, std::initializer_list<std::string> names) {
  for (const std::string& n : names)
    if (auto it = m.find(n); it != m.end()) return &it->second;
  return nullptr;
}

std::string check_tower_tensor(const TensorRef& r, const std::vector<int64_t>& want) {
  const bool float_dtype = r.dtype == DType::F32 || r.dtype == DType::BF16 || r.dtype == DType::F16;
  if (r.shape != want)
    return "[load] " + r.origin + ": expected " + shape_str(want) + ", got " + shape_str(r.shape);
  if (!float_dtype)
    return "[load] " + r.origin + ": dtype " + dtype_name(r.dtype) +
           " is not supported for a tower weight (F32, BF16 or F16)";
  return "";
}

MatView tower_matrix(const TensorRef& r) {
  MatView v;
  v.dtype = r.dtype;
  v.data = r.data;
  v.rows = r.shape[0];
  v.cols = r.shape[1];
  v.row_stride = r.shape[1];
  bind_kernels(v);
  return v;
}

std::vector<float> tower_vector(const TensorRef& r) {
  int64_t n = 1;
  for (int64_t d : r.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = load_as_f32(r.dtype, r.data, size_t(i));
  return out;
}

namespace {

std::string bind_vision(const MediaConfig& mc, const TensorMap& m, int H, Towers* t) {
  const std::string vis = "model.visual.layers.", hf = "model.vision_tower.encoder_layers.";
  int t_left = mc.temporal, s_left = mc.patch;
  int64_t width = mc.channels;
  std::vector<VisionLayerWeights> layers;
  for (int i = 0; i < mc.vision_layers; ++i) {
    const std::string is = std::to_string(i);
    const TensorRef* w =
        find_tower_tensor(m, {vis + "linear_" + is + ".weight", hf + is + ".projection.weight"});
    if (!w)
      return "[load] missing tensor model.visual.layers.linear_" + is +
             ".weight (vision_config.n_layers = " + std::to_string(mc.vision_layers) + ")";
    if (w->shape.size() != 2)
      return "[load] " + w->origin + ": expected a matrix, got " + shape_str(w->shape);
    const bool last = i + 1 == mc.vision_layers;
    const int64_t out = w->shape[0], in = w->shape[1];
    if (last && out != H)
      return "[load] " + w->origin + ": expected " + std::to_string(H) +
             " output rows (the text hidden size), got " + shape_str(w->shape);
    VisionLayerWeights l;
    bool found = false;
    for (int hw = s_left; hw >= 1 && !found; --hw) {
      if (s_left % hw) continue;
      for (int tf = 1; tf <= t_left && !found; ++tf)
        if (t_left % tf == 0 && int64_t(tf) * hw * hw * width == in)
          l.t_fold = tf, l.hw_fold = hw, found = true;
    }
    if (!found)
      return "[load] " + w->origin + ": input width " + std::to_string(in) +
             " is no fold of the remaining " + std::to_string(t_left) + "x" +
             std::to_string(s_left) + "x" + std::to_string(s_left) + " grid of width " +
             std::to_string(width);
    if (std::string e = check_tower_tensor(*w, {out, in}); !e.empty()) return e;
    t_left /= l.t_fold, s_left /= l.hw_fold;
    if (last && (t_left != 1 || s_left != 1))
      return "[load] " + w->origin + ": the last vision layer leaves a " + std::to_string(t_left) +
             "x" + std::to_string(s_left) + "x" + std::to_string(s_left) +
             " grid per tile (expected 1 row per tile)";
    l.proj = tower_matrix(*w);
    if (!l.proj.kernels) return "[load] " + w->origin + ": no kernel for this storage";
    t->bound.push_back(w->origin);
    if (!last) {
      const TensorRef* n =
          find_tower_tensor(m, {vis + "norm_" + is + ".weight", hf + is + ".layer_norm.weight"});
      if (!n) return "[load] missing tensor model.visual.layers.norm_" + is + ".weight";
      if (std::string e = check_tower_tensor(*n, {out}); !e.empty()) return e;
      l.norm = tower_vector(*n);
      t->bound.push_back(n->origin);
    }
    width = out;
    layers.push_back(std::move(l));
  }
  const TensorRef* fn = find_tower_tensor(
      m, {"model.visual.final_norm.weight", "model.vision_tower.final_norm.weight"});
  if (!fn) return "[load] missing tensor model.visual.final_norm.weight";
  if (std::string e = check_tower_tensor(*fn, {H}); !e.empty()) return e;
  t->vision_norm = tower_vector(*fn);
  t->bound.push_back(fn->origin);
  t->vision = std::move(layers);
  return "";
}

std::string bind_audio(const MediaConfig& mc, const TensorMap& m, int H, Towers* t) {
  const TensorRef* e =
      find_tower_tensor(m, {"model.audio.encoder.weight",
                            "model.audio_tower.embed_audio_tokens.embed_audio_tokens.weight"});
  const TensorRef* n =
      find_tower_tensor(m, {"model.audio.final_norm.weight", "model.audio_tower.norm.weight"});
  if (!e) return "[load] missing tensor model.audio.encoder.weight";
  if (!n) return "[load] missing tensor model.audio.final_norm.weight";
  if (std::string s = check_tower_tensor(*e, {int64_t(mc.mel_bins) * mc.mel_levels, H}); !s.empty())
    return s + " (audio_config: n_mel_bins " + std::to_string(mc.mel_bins) + " x mel_vocab_size " +
           std::to_string(mc.mel_levels) + " rows)";
  if (std::string s = check_tower_tensor(*n, {H}); !s.empty()) return s;
  t->audio_table = tower_matrix(*e);
  t->audio_norm = tower_vector(*n);
  t->bound.push_back(e->origin);
  t->bound.push_back(n->origin);
  return "";
}

bool any_prefix(const TensorMap& m, std::initializer_list<const char*> prefixes) {
  for (const auto& [name, r] : m)
    for (const char* p : prefixes)
      if (name.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

Towers bind_towers(const MediaConfig& mc, const TensorMap& m, int H) {
  Towers t;
  if (mc.inkling2) {  // the ViT; Inkling 2 has no audio tower
    if (!any_prefix(m, {"model.visual.", "model.vision_tower."})) return t;
    if (!mc.has_vision)
      t.vision_error = "[load] the checkpoint has vision tensors but config.json no vision_config";
    else
      t.vision_error = bind_vit(mc.vit, m, H, &t.vit, &t.bound);
    if (!t.vision_error.empty()) t.vit = VitWeights{}, t.bound.clear();
    return t;
  }
  if (any_prefix(m, {"model.visual.layers.", "model.vision_tower."})) {
    if (!mc.has_vision)
      t.vision_error = "[load] the checkpoint has vision tensors but config.json no vision_config";
    else
      t.vision_error = bind_vision(mc, m, H, &t);
    if (!t.vision_error.empty()) t.vision.clear();
  }
  if (any_prefix(m, {"model.audio.encoder.", "model.audio.final_norm.", "model.audio_tower."})) {
    if (!mc.has_audio)
      t.audio_error = "[load] the checkpoint has audio tensors but config.json no audio_config";
    else
      t.audio_error = bind_audio(mc, m, H, &t);
    if (!t.audio_error.empty()) t.audio_table = MatView{};
  }
  if (!t.vision_ok() || !t.audio_ok()) {
    // Keep `bound` to what is usable.
    std::vector<std::string> keep;
    for (const std::string& n : t.bound) {
      const bool vision =
          n.find("visual") != std::string::npos || n.find("vision") != std::string::npos;
      if (vision ? t.vision_ok() : t.audio_ok()) keep.push_back(n);
    }
    t.bound = keep;
  }
  return t;
}

void bind_tower_numerics(Towers& t, Numerics n) {
  const KernelMode mode = n == Numerics::kExact ? KernelMode::kExact : KernelMode::kFastFine;
  auto rebind = [&](MatView& v) {
    if (v.data) bind_kernels(v, mode);
  };
  for (VisionLayerWeights& l : t.vision) rebind(l.proj);
  VitWeights& w = t.vit;
  for (MatView* v : {&w.patch_embed, &w.proj1, &w.proj2}) rebind(*v);
  for (VitLayer& l : w.layers)
    for (MatView* v : {&l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2}) rebind(*v);
  w.numerics = n;
}

}  // namespace inkling
