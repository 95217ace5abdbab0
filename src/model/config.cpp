// config.json -> ModelConfig: aliases (OG vs transformers spellings), defaults, layer
// classification, MLP width resolution and validation. Nothing downstream re-reads the JSON.
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace inkling {

using nlohmann::json;

namespace {

// Reads typed fields from one JSON object, remembering the first error. Field names in errors
// are qualified with the object's path ("text_config.hidden_size").
class Fields {
 public:
  Fields(const json& obj, std::string prefix) : obj_(obj), prefix_(std::move(prefix)) {}

  const json* find(std::initializer_list<const char*> names) const {
    for (const char* n : names) {
      auto it = obj_.find(n);
      if (it != obj_.end() && !it->is_null()) return &*it;
    }
    return nullptr;
  }
  bool has(std::initializer_list<const char*> names) const { return find(names) != nullptr; }

  template <typename T>
  void integer(std::initializer_list<const char*> names, T* out, int64_t min_value = 1) {
    const json* v = find(names);
    if (!v) return;
    if (!v->is_number_integer() &&
        !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
      return fail(*names.begin(), "must be an integer, got " + v->dump());
    const int64_t x = v->is_number_integer() ? v->get<int64_t>() : int64_t(v->get<double>());
    if (x < min_value)
      return fail(*names.begin(),
                  "must be >= " + std::to_string(min_value) + ", got " + std::to_string(x));
    if (x > std::min<int64_t>(int64_t(1) << 40, std::numeric_limits<T>::max()))
      return fail(*names.begin(), "is implausibly large: " + std::to_string(x));
    *out = T(x);
  }
  void number(std::initializer_list<const char*> names, double* out) {
    const json* v = find(names);
    if (!v) return;
    if (!v->is_number()) return fail(*names.begin(), "must be a number, got " + v->dump());
    *out = v->get<double>();
    if (!std::isfinite(*out)) return fail(*names.begin(), "must be finite");
  }
  void fail(const std::string& field, const std::string& what) {
    if (status_.is_ok()) status_ = Status::error("field '" + prefix_ + field + "' " + what);
  }
  const Status& status() const { return status_; }

 private:
  const json& obj_;
  std::string prefix_;
  Status status_;
};

void read_eos(const json* v, std::vector<int32_t>* out, Fields* f) {
  if (!v) return;
  out->clear();
  auto one = [&](const json& e) {
    // Read as 64-bit first so 2^32 + 5 cannot wrap to 5; the vocabulary check comes later.
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX) {
      f->fail("eos_token_id",
              "must be a non-negative 32-bit integer or a list of them, got " + e.dump());
      return;
    }
    out->push_back(int32_t(e.get<int64_t>()));
  };
  if (v->is_array()) {
    for (const auto& e : *v) one(e);
  } else {
    one(*v);
  }
}

}  // namespace

bool ModelConfig::has_moe() const {
  for (const auto& l : layers)
    if (!l.dense) return true;
  return false;
}

Result<ModelConfig> parse_config(const std::string& text, const std::string& source) {
  auto err = [&](const std::string& what) {
    return Status::error("[config] " + source + ": " + what);
  };
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded()) return err("not valid JSON");
  if (!root.is_object()) return err("top level is not a JSON object");

  ModelConfig c;
  if (auto it = root.find("model_type"); it != root.end() && it->is_string())
    c.model_type = it->get<std::string>();
  static const char* kAccepted[] = {"inkling_mm_model", "inkling", "inkling_text"};
  if (!c.model_type.empty() &&
      std::find(std::begin(kAccepted), std::end(kAccepted), c.model_type) == std::end(kAccepted))
    return err("model_type '" + c.model_type +
               "' is not an Inkling model (expected inkling_mm_model, inkling or inkling_text)");

  const bool nested = root.contains("text_config");
  if (nested && !root["text_config"].is_object())
    return err("field 'text_config' must be an object");
  const json& tc = nested ? root["text_config"] : root;
  Fields top(root, "");
  Fields f(tc, nested ? "text_config." : "");

  f.integer({"vocab_size"}, &c.vocab_size);
  top.integer({"vocab_size"}, &c.vocab_size);  // a top-level value describes the same vocabulary
  c.unpadded_vocab = 0;
  f.integer({"unpadded_vocab_size"}, &c.unpadded_vocab);
  f.integer({"hidden_size"}, &c.hidden);
  f.integer({"num_hidden_layers"}, &c.n_layers);
  f.integer({"num_attention_heads"}, &c.n_heads);
  f.integer({"num_key_value_heads"}, &c.n_kv_heads);
  f.integer({"head_dim"}, &c.head_dim);
  f.integer({"swa_num_attention_heads"}, &c.swa_n_heads);
  f.integer({"swa_num_key_value_heads"}, &c.swa_n_kv_heads);
  f.integer({"swa_head_dim"}, &c.swa_head_dim);
  f.integer({"sliding_window_size", "sliding_window"}, &c.window);
  f.integer({"d_rel"}, &c.d_rel);
  f.integer({"rel_extent"}, &c.rel_extent);
  if (f.has({"log_scaling_n_floor"})) {
    double v = 0;
    f.number({"log_scaling_n_floor"}, &v);
    if (v <= 0) f.fail("log_scaling_n_floor", "must be positive or null");
    c.log_floor = v;
  }
  f.number({"log_scaling_alpha"}, &c.log_alpha);
  f.number({"rms_norm_eps"}, &c.rms_eps);
  f.integer({"max_position_embeddings", "model_max_length"}, &c.max_positions);
  if (c.rms_eps < 0) f.fail("rms_norm_eps", "must be non-negative");
  f.integer({"conv_kernel_size", "sconv_kernel_size"}, &c.conv_k);

  // MLP widths: OG files name the expert width `intermediate_size` and carry
  // `dense_intermediate_size`; transformers files use intermediate_size (dense) and
  // moe_intermediate_size (expert). transformers itself gets this wrong for OG Inkling-Small.
  if (f.has({"dense_intermediate_size"})) {
    c.format = "og";
    f.integer({"dense_intermediate_size"}, &c.dense_width);
    f.integer({"intermediate_size"}, &c.moe_width);
    f.integer({"moe_intermediate_size"}, &c.moe_width);
  } else {
    c.format = "hf";
    f.integer({"intermediate_size"}, &c.dense_width);
    f.integer({"moe_intermediate_size"}, &c.moe_width);
  }
  f.integer({"n_routed_experts", "num_local_experts"}, &c.n_routed);
  f.integer({"num_experts_per_tok"}, &c.top_k);
  f.integer({"n_shared_experts"}, &c.n_shared, 0);
  f.number({"route_scale"}, &c.route_scale);
  f.number({"logits_mup_width_multiplier", "embedding_multiplier"}, &c.mup_divisor);
  if (c.mup_divisor == 0) f.fail("logits_mup_width_multiplier", "must be non-zero");
  read_eos(f.find({"eos_token_id"}), &c.eos_ids, &f);
  read_eos(top.find({"eos_token_id"}), &c.eos_ids, &top);
  INK_RETURN_IF_ERROR(top.status().with_context("[config] " + source + ": "));
  INK_RETURN_IF_ERROR(f.status().with_context("[config] " + source + ": "));

  const std::string p = nested ? "text_config." : "";
  if (c.unpadded_vocab == 0) c.unpadded_vocab = c.vocab_size;
  if (c.unpadded_vocab > c.vocab_size)
    return err("field '" + p + "unpadded_vocab_size' (" + std::to_string(c.unpadded_vocab) +
               ") exceeds vocab_size (" + std::to_string(c.vocab_size) + ")");
  if (c.n_heads % c.n_kv_heads != 0)
    return err("field '" + p + "num_attention_heads' (" + std::to_string(c.n_heads) +
               ") is not a multiple of num_key_value_heads (" + std::to_string(c.n_kv_heads) + ")");
  if (c.swa_n_heads % c.swa_n_kv_heads != 0)
    return err("field '" + p + "swa_num_attention_heads' (" + std::to_string(c.swa_n_heads) +
               ") is not a multiple of swa_num_key_value_heads (" +
               std::to_string(c.swa_n_kv_heads) + ")");
  for (int32_t e : c.eos_ids)
    if (e < 0 || e >= c.vocab_size)
      return err("field 'eos_token_id' (" + std::to_string(e) + ") is outside the vocabulary");

  // Layer classification: layer_types -> local_layer_ids -> (i+1) % 6 != 0.
  const int n = c.n_layers;
  c.layers.assign(size_t(n), LayerSpec{});
  if (const json* lt = f.find({"layer_types"})) {
    if (!lt->is_array() || int(lt->size()) != n)
      return err("field '" + p + "layer_types' must be a list of " + std::to_string(n) +
                 " strings");
    for (int i = 0; i < n; ++i) {
      const json& v = (*lt)[size_t(i)];
      const std::string s = v.is_string() ? v.get<std::string>() : "";
      if (s == "hybrid_sliding" || s == "sliding_attention")
        c.layers[i].sliding = true;
      else if (s == "hybrid" || s == "full_attention")
        c.layers[i].sliding = false;
      else
        return err("field '" + p + "layer_types[" + std::to_string(i) + "]' is " + v.dump() +
                   ", expected \"hybrid_sliding\" or \"hybrid\"");
    }
  } else if (const json* ids = f.find({"local_layer_ids"})) {
    if (!ids->is_array())
      return err("field '" + p + "local_layer_ids' must be a list of layer indices");
    for (auto& l : c.layers) l.sliding = false;
    for (const auto& v : *ids) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n)
        return err("field '" + p + "local_layer_ids' has " + v.dump() +
                   ", not a layer index below " + std::to_string(n));
      c.layers[v.get<size_t>()].sliding = true;
    }
  } else {
    for (int i = 0; i < n; ++i) c.layers[i].sliding = (i + 1) % 6 != 0;
  }
  // MLP kind: mlp_layer_types -> dense_mlp_idx -> every layer MoE.
  if (const json* mt = f.find({"mlp_layer_types"})) {
    if (!mt->is_array() || int(mt->size()) != n)
      return err("field '" + p + "mlp_layer_types' must be a list of " + std::to_string(n) +
                 " strings");
    for (int i = 0; i < n; ++i) {
      const json& v = (*mt)[size_t(i)];
      const std::string s = v.is_string() ? v.get<std::string>() : "";
      if (s == "dense")
        c.layers[i].dense = true;
      else if (s == "sparse" || s == "moe")
        c.layers[i].dense = false;
      else
        return err("field '" + p + "mlp_layer_types[" + std::to_string(i) + "]' is " + v.dump() +
                   ", expected \"dense\" or \"sparse\"");
    }
  } else {
    int dense_idx = 0;
    f.integer({"dense_mlp_idx"}, &dense_idx, 0);
    INK_RETURN_IF_ERROR(f.status().with_context("[config] " + source + ": "));
    for (int i = 0; i < n; ++i) c.layers[i].dense = i < dense_idx;
  }
  for (auto& l : c.layers) {
    l.n_heads = l.sliding ? c.swa_n_heads : c.n_heads;
    l.n_kv_heads = l.sliding ? c.swa_n_kv_heads : c.n_kv_heads;
    l.head_dim = l.sliding ? c.swa_head_dim : c.head_dim;
    l.rel_extent = l.sliding ? c.window : c.rel_extent;
  }
  if (c.has_moe() && c.top_k > c.n_routed)
    return err("field '" + p + "num_experts_per_tok' (" + std::to_string(c.top_k) +
               ") exceeds n_routed_experts (" + std::to_string(c.n_routed) + ")");
  return c;
}

Result<ModelConfig> load_config(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  auto text = read_text_file(path);
  if (!text.ok()) return text.status().with_context("[config] ");
  return parse_config(text.value(), path);
}

}  // namespace inkling
