// config.json -> ModelConfig: aliases (OG vs transformers spellings), defaults, layer
// classification, MLP width resolution and validation. Nothing downstream re-reads the JSON.
#include "model/config.h"
#include "base/json_limits.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace inkling {

using nlohmann::json;

namespace {

// Upper bounds on every config value that sizes memory or indexes a buffer. Each is far above
// the largest published Inkling (spec section 9: Inkling 975B has vocab 201024, hidden 6144,
// 66 layers, 64 heads x 128, d_rel 16, window 512, rel_extent 1024, K 4, widths 24576/3072,
// 256 experts, top 6 + 2 shared), and together they keep every size the engine derives (rows x
// widths x chunk, experts x 2I x H, ...) well inside int64, and per-layer widths inside int.
constexpr int64_t kMaxAnyInteger = int64_t(1) << 40;
constexpr int64_t kMaxVocab = int64_t(1) << 24;       // token ids are int32; real 201024
constexpr int64_t kMaxWidth = int64_t(1) << 20;       // hidden / intermediate sizes; real <= 24576
constexpr int64_t kMaxLayers = int64_t(1) << 12;      // real 66
constexpr int64_t kMaxHeads = int64_t(1) << 12;       // attention / kv heads; real <= 64
constexpr int64_t kMaxHeadDim = int64_t(1) << 12;     // head_dim, d_rel; real 128, 16
constexpr int64_t kMaxHeadsWidth = int64_t(1) << 20;  // heads x head_dim, heads x d_rel; 8192
constexpr int64_t kMaxExtent = int64_t(1) << 24;      // window, rel_extent; real 512, 1024
constexpr int64_t kMaxConvK = 256;                    // short-conv taps; real 4
constexpr int64_t kMaxExperts = int64_t(1) << 16;     // routed experts; real 256
constexpr int64_t kMaxTopK = 1024;                    // experts per token; real 6
constexpr int64_t kMaxShared = 1024;                  // shared experts; real 2

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

  // Reads an integer field into `out`, rejecting values outside [min_value, max_value] (and
  // outside T) with one error naming the field, so nothing downstream can wrap or overrun.
  template <typename T>
  void integer(std::initializer_list<const char*> names, T* out, int64_t min_value = 1,
               int64_t max_value = kMaxAnyInteger) {
    const json* v = find(names);
    if (!v) return;
    if (!v->is_number_integer() &&
        !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
      return fail(*names.begin(), "must be an integer, got " + v->dump());
    // Compared as the JSON spelled it, never wrapped first: an unsigned value above INT64_MAX
    // or a float such as 1e30 (whose conversion to int64 would be undefined) is too large.
    const int64_t limit = std::min<int64_t>(max_value, std::numeric_limits<T>::max());
    int64_t x = 0;
    bool too_large = false;
    if (v->is_number_unsigned()) {
      too_large = v->get<uint64_t>() > uint64_t(limit);
      x = too_large ? limit : int64_t(v->get<uint64_t>());
    } else if (v->is_number_float()) {
      const double d = v->get<double>();
      too_large = d > double(limit);  // limits are below 2^53: exact as doubles
      x = too_large ? limit : d < double(min_value) ? min_value - 1 : int64_t(d);
    } else {
      x = v->get<int64_t>();
      too_large = x > limit;
    }
    if (too_large)
      return fail(*names.begin(),
                  "= " + v->dump() + " exceeds the supported maximum " + std::to_string(limit));
    if (x < min_value)
      return fail(*names.begin(), "must be >= " + std::to_string(min_value) + ", got " + v->dump());
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
    if (status_.ok()) status_ = Status::error("field '" + prefix_ + field + "' " + what);
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

// mtp_config (an object at the top level or in text_config) or the flat HF spellings in the
// text config. Checked like the trunk's fields; chain_hidden_post_norm is refused (the released
// checkpoints have no chain_norm tensor, and the spec leaves its use by deeper depths open).
Status read_mtp(const json& root, const json& tc, const std::string& p, ModelConfig* c) {
  const json* obj = nullptr;
  std::string prefix;
  for (const auto& [o, name] : {std::pair<const json*, std::string>{&root, ""}, {&tc, p}}) {
    auto it = o->find("mtp_config");
    if (it == o->end() || it->is_null()) continue;
    if (!it->is_object()) return Status::error("field '" + name + "mtp_config' must be an object");
    obj = &*it;
    prefix = name + "mtp_config.";
    break;
  }
  const json& src = obj ? *obj : tc;
  if (!obj) prefix = p;
  Fields f(src, prefix);
  int n = 0;
  // Inside mtp_config the OG names (HF ones accepted too); flat in a text config only the HF
  // names, which cannot be confused with the trunk's own local_layer_ids.
  const bool in_obj = obj != nullptr;
  if (in_obj)
    f.integer({"num_nextn_predict_layers", "num_mtp_layers"}, &n, 0, kMaxLayers);
  else
    f.integer({"num_mtp_layers"}, &n, 0, kMaxLayers);
  int extent = c->window;
  if (in_obj)
    f.integer({"local_extent", "mtp_local_extent"}, &extent, 1, kMaxExtent);
  else
    f.integer({"mtp_local_extent"}, &extent, 1, kMaxExtent);
  INK_RETURN_IF_ERROR(f.status());
  auto boolean = [&](std::initializer_list<const char*> names, bool* out) -> Status {
    for (const char* name : names) {
      const json* v = f.find({name});
      if (!v) continue;
      if (!v->is_boolean())
        return Status::error("field '" + prefix + name + "' must be true or false, got " +
                             v->dump());
      *out = v->get<bool>();
      break;
    }
    return Status::success();
  };
  bool chain = false;
  INK_RETURN_IF_ERROR(boolean({"chain_hidden_post_norm"}, &chain));
  if (in_obj)
    INK_RETURN_IF_ERROR(
        boolean({"hidden_states_first", "mtp_hidden_states_first"}, &c->mtp.hidden_first));
  else
    INK_RETURN_IF_ERROR(boolean({"mtp_hidden_states_first"}, &c->mtp.hidden_first));
  if (chain && n > 0)
    return Status::error("field '" + prefix +
                         "chain_hidden_post_norm' is true: MTP depths with a chain_norm are not "
                         "supported");
  std::vector<bool> local(size_t(n), false);
  const char* ids_name =
      in_obj && f.has({"local_layer_ids"}) ? "local_layer_ids" : "mtp_local_layer_ids";
  if (const json* ids = f.find({ids_name})) {
    if (!ids->is_array())
      return Status::error("field '" + prefix + ids_name + "' must be a list of depth indices");
    for (const auto& v : *ids) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n)
        return Status::error("field '" + prefix + ids_name + "' has " + v.dump() +
                             ", not a depth index below " + std::to_string(n));
      local[v.get<size_t>()] = true;
    }
  }
  c->mtp.local_extent = extent;
  c->mtp.depths.clear();
  for (int d = 0; d < n; ++d) {
    LayerSpec s;
    s.sliding = local[size_t(d)];
    s.dense = true;
    s.n_heads = s.sliding ? c->swa_n_heads : c->n_heads;
    s.n_kv_heads = s.sliding ? c->swa_n_kv_heads : c->n_kv_heads;
    s.head_dim = s.sliding ? c->swa_head_dim : c->head_dim;
    s.rel_extent = s.sliding ? extent : c->rel_extent;
    c->mtp.depths.push_back(s);
  }
  return Status::success();
}

}  // namespace

const char* family_name(Family f) {
  return f == Family::kInkling2 ? "inkling2" : "inkling";
}

int ModelConfig::moe_visits() const {
  int n = 0;
  for (const Visit& v : schedule()) n += !layers[size_t(v.layer)].dense;
  return n;
}

std::vector<ModelConfig::Visit> ModelConfig::schedule() const {
  std::vector<Visit> out;
  const int s = v2.looped() ? v2.loop_start : n_layers, e = v2.looped() ? v2.loop_end : n_layers;
  for (int i = 0; i < s; ++i) out.push_back({i, i, 0});
  for (int p = 1; p <= (v2.looped() ? v2.loop_passes : 0); ++p)
    for (int i = s; i < e; ++i)
      out.push_back({i, p == 1 ? i : n_layers + (p - 2) * (e - s) + (i - s), p});
  for (int i = e; i < n_layers; ++i) out.push_back({i, i, 0});
  return out;
}

std::vector<LayerSpec> ModelConfig::cache_slots() const {
  std::vector<LayerSpec> out = layers;
  for (const Visit& v : schedule())
    if (v.slot >= n_layers) out.push_back(layers[size_t(v.layer)]);
  return out;
}

bool ModelConfig::has_moe() const {
  for (const auto& l : layers)
    if (!l.dense) return true;
  return false;
}

Result<ModelConfig> parse_config(const std::string& text, const std::string& source) {
  auto err = [&](const std::string& what) {
    return Status::error("[config] " + source + ": " + what);
  };
  INK_RETURN_IF_ERROR(check_json_depth(text, "[config] " + source));
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded()) return err("not valid JSON");
  if (!root.is_object()) return err("top level is not a JSON object");

  ModelConfig c;
  if (auto it = root.find("model_type"); it != root.end() && it->is_string())
    c.model_type = it->get<std::string>();
  static const char* kAccepted[] = {"inkling_mm_model",  "inkling",       "inkling_text",
                                    "inkling2",          "inkling2_text", "inkling2_loop",
                                    "inkling2_loop_text"};
  if (!c.model_type.empty() &&
      std::find(std::begin(kAccepted), std::end(kAccepted), c.model_type) == std::end(kAccepted))
    return err("model_type '" + c.model_type +
               "' is not an Inkling model (expected inkling_mm_model, inkling, inkling_text, "
               "inkling2, inkling2_text, inkling2_loop or inkling2_loop_text)");

  const bool nested = root.contains("text_config");
  if (nested && !root["text_config"].is_object())
    return err("field 'text_config' must be an object");
  const json& tc = nested ? root["text_config"] : root;
  Fields top(root, "");
  Fields f(tc, nested ? "text_config." : "");
  {
    std::string text_type = c.model_type;
    if (auto it = tc.find("model_type"); nested && it != tc.end() && it->is_string())
      text_type = it->get<std::string>();
    const bool v2 = c.model_type.rfind("inkling2", 0) == 0 || text_type.rfind("inkling2", 0) == 0;
    if (v2) {
      c.family = Family::kInkling2;
      // Inkling 2 Small's defaults (Mini's config states every field it changes).
      c.hidden = 4608, c.n_layers = 48, c.n_heads = 48, c.n_kv_heads = 8, c.head_dim = 128;
      c.swa_n_heads = 48, c.swa_n_kv_heads = 8, c.swa_head_dim = 128, c.window = 1024;
      c.log_floor = 128000, c.moe_width = 2304, c.n_routed = 384, c.top_k = 8, c.n_shared = 0;
      c.dense_width = 0, c.mup_divisor = 1, c.unpadded_vocab = 200058;
      if (!tc.contains("eos_token_id") && !root.contains("eos_token_id")) c.eos_ids = {200006};
      const bool loop = c.model_type.rfind("inkling2_loop", 0) == 0 ||
                        text_type.rfind("inkling2_loop", 0) == 0 || tc.contains("loop_config") ||
                        tc.contains("loop_layer_index_start");
      if (loop) {
        c.hidden = 2304, c.n_layers = 24, c.n_heads = 24, c.swa_n_heads = 24;
        c.log_floor = 8192, c.moe_width = 1152, c.n_routed = 128;
        c.v2.loop_start = 6, c.v2.loop_end = 18, c.v2.loop_passes = 3;
      }
    }
  }

  f.integer({"vocab_size"}, &c.vocab_size, 1, kMaxVocab);
  // A top-level value describes the same vocabulary.
  top.integer({"vocab_size"}, &c.vocab_size, 1, kMaxVocab);
  c.unpadded_vocab = 0;
  f.integer({"unpadded_vocab_size"}, &c.unpadded_vocab, 1, kMaxVocab);
  f.integer({"hidden_size"}, &c.hidden, 1, kMaxWidth);
  f.integer({"num_hidden_layers"}, &c.n_layers, 1, kMaxLayers);
  f.integer({"num_attention_heads"}, &c.n_heads, 1, kMaxHeads);
  f.integer({"num_key_value_heads"}, &c.n_kv_heads, 1, kMaxHeads);
  f.integer({"head_dim"}, &c.head_dim, 1, kMaxHeadDim);
  f.integer({"swa_num_attention_heads"}, &c.swa_n_heads, 1, kMaxHeads);
  f.integer({"swa_num_key_value_heads"}, &c.swa_n_kv_heads, 1, kMaxHeads);
  f.integer({"swa_head_dim"}, &c.swa_head_dim, 1, kMaxHeadDim);
  f.integer({"sliding_window_size", "sliding_window"}, &c.window, 1, kMaxExtent);
  f.integer({"d_rel"}, &c.d_rel, 1, kMaxHeadDim);
  f.integer({"rel_extent"}, &c.rel_extent, 1, kMaxExtent);
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
  f.integer({"conv_kernel_size", "sconv_kernel_size"}, &c.conv_k, 1, kMaxConvK);

  // MLP widths: OG files name the expert width `intermediate_size` and carry
  // `dense_intermediate_size`; transformers files use intermediate_size (dense) and
  // moe_intermediate_size (expert). transformers itself gets this wrong for OG Inkling-Small.
  if (c.family == Family::kInkling2) {
    c.format = "hf";  // Inkling 2 has no dense MLP: intermediate_size is the expert width
    f.integer({"moe_intermediate_size", "intermediate_size"}, &c.moe_width, 1, kMaxWidth);
    for (const char* gone : {"n_shared_experts", "dense_intermediate_size", "mlp_layer_types"})
      if (const json* v = f.find({gone}); v && !(v->is_number() && v->get<double>() == 0))
        f.fail(gone, "is not an Inkling 2 field (Inkling 2 has no shared experts or dense MLP)");
  } else if (f.has({"dense_intermediate_size"})) {
    c.format = "og";
    f.integer({"dense_intermediate_size"}, &c.dense_width, 1, kMaxWidth);
    f.integer({"intermediate_size"}, &c.moe_width, 1, kMaxWidth);
    f.integer({"moe_intermediate_size"}, &c.moe_width, 1, kMaxWidth);
  } else {
    c.format = "hf";
    f.integer({"intermediate_size"}, &c.dense_width, 1, kMaxWidth);
    f.integer({"moe_intermediate_size"}, &c.moe_width, 1, kMaxWidth);
  }
  f.integer({"n_routed_experts", "num_local_experts"}, &c.n_routed, 1, kMaxExperts);
  f.integer({"num_experts_per_tok"}, &c.top_k, 1, kMaxTopK);
  if (c.family == Family::kInkling) f.integer({"n_shared_experts"}, &c.n_shared, 0, kMaxShared);
  f.number({"route_scale"}, &c.route_scale);
  f.number({"logits_mup_width_multiplier", "embedding_multiplier"}, &c.mup_divisor);
  if (c.mup_divisor == 0) f.fail("logits_mup_width_multiplier", "must be non-zero");
  if (c.family == Family::kInkling2) {
    Inkling2Config& v = c.v2;
    f.integer({"n_layers_per_attn_res_block"}, &v.block, 1, kMaxLayers);
    f.number({"qk_l2_clip_threshold"}, &v.qk_clip);
    f.number({"rel_l2_clip_threshold"}, &v.rel_clip);
    f.number({"mlp_gate_softcap"}, &v.gate_cap);
    f.number({"mlp_up_softcap"}, &v.up_cap);
    f.number({"final_logit_softcapping"}, &v.logit_cap);
    for (auto [name, x] : {std::pair<const char*, double>{"qk_l2_clip_threshold", v.qk_clip},
                           {"rel_l2_clip_threshold", v.rel_clip},
                           {"mlp_gate_softcap", v.gate_cap},
                           {"mlp_up_softcap", v.up_cap},
                           {"final_logit_softcapping", v.logit_cap}})
      if (!(x > 0)) f.fail(name, "must be positive");
    if (const json* sf = f.find({"scoring_func"}); sf && !(sf->is_string() && *sf == "sigmoid"))
      f.fail("scoring_func", "is " + sf->dump() + "; Inkling 2 routes with \"sigmoid\"");
    if (const json* lc = f.find({"loop_config"})) {
      if (!lc->is_object()) {
        f.fail("loop_config", "must be an object");
      } else {
        Fields l(*lc, std::string(nested ? "text_config." : "") + "loop_config.");
        l.integer({"core_start"}, &v.loop_start, 0, kMaxLayers);
        l.integer({"core_end"}, &v.loop_end, 0, kMaxLayers);
        l.integer({"num_passes"}, &v.loop_passes, 1, 64);
        l.integer({"gate_rank"}, &v.loop_rank, 1, kMaxWidth);
        INK_RETURN_IF_ERROR(l.status().with_context("[config] " + source + ": "));
      }
    }
    f.integer({"loop_layer_index_start"}, &v.loop_start, 0, kMaxLayers);
    f.integer({"loop_layer_index_end"}, &v.loop_end, 0, kMaxLayers);
    f.integer({"loop_num_passes"}, &v.loop_passes, 1, 64);
    f.integer({"loop_gate_rank"}, &v.loop_rank, 1, kMaxWidth);
  }
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
  // Per-layer widths (query rows, relative-state rows) size scratch rows and weight shapes.
  struct Product {
    const char* a;
    const char* b;
    int64_t x, y;
  };
  for (const Product& q :
       {Product{"num_attention_heads", "head_dim", c.n_heads, c.head_dim},
        Product{"swa_num_attention_heads", "swa_head_dim", c.swa_n_heads, c.swa_head_dim},
        Product{"num_attention_heads", "d_rel", c.n_heads, c.d_rel},
        Product{"swa_num_attention_heads", "d_rel", c.swa_n_heads, c.d_rel}})
    if (q.x * q.y > kMaxHeadsWidth)
      return err("field '" + p + q.a + "' x '" + p + q.b + "' (" + std::to_string(q.x) + " x " +
                 std::to_string(q.y) + ") exceeds the supported maximum " +
                 std::to_string(kMaxHeadsWidth));
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
  if (c.family == Family::kInkling2) {
    const Inkling2Config& v = c.v2;
    const std::string b = std::to_string(v.block);
    if (v.looped()) {
      if (v.loop_start <= 0 || v.loop_start % v.block != 0)
        return err("field '" + p + "loop_layer_index_start' (" + std::to_string(v.loop_start) +
                   ") must be a positive multiple of n_layers_per_attn_res_block (" + b + ")");
      if (v.loop_end % v.block != 0 || v.loop_end > c.n_layers)
        return err("field '" + p + "loop_layer_index_end' (" + std::to_string(v.loop_end) +
                   ") must be a multiple of n_layers_per_attn_res_block (" + b +
                   ") and at most num_hidden_layers (" + std::to_string(c.n_layers) + ")");
    } else if (v.loop_end != 0 || v.loop_start != 0) {
      return err("field '" + p + "loop_layer_index_end' (" + std::to_string(v.loop_end) +
                 ") must exceed loop_layer_index_start (" + std::to_string(v.loop_start) + ")");
    }
    if (int64_t(c.n_layers) + int64_t(v.loop_passes - 1) * (v.loop_end - v.loop_start) > kMaxLayers)
      return err("field '" + p + "loop_num_passes' (" + std::to_string(v.loop_passes) +
                 ") makes more than " + std::to_string(kMaxLayers) + " layer visits");
  }
  if (c.has_moe() && c.top_k > c.n_routed)
    return err("field '" + p + "num_experts_per_tok' (" + std::to_string(c.top_k) +
               ") exceeds n_routed_experts (" + std::to_string(c.n_routed) + ")");
  if (c.family == Family::kInkling)
    INK_RETURN_IF_ERROR(read_mtp(root, tc, p, &c).with_context("[config] " + source + ": "));
  return c;
}

namespace {

// Adds generation_config.json's eos_token_id (one id or a list) to the config's end ids.
Status add_generation_eos(const std::string& text, const std::string& source, ModelConfig* c) {
  INK_RETURN_IF_ERROR(check_json_depth(text, "[config] " + source));
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object())
    return Status::error("[config] " + source + ": not a JSON object");
  const json* v = root.contains("eos_token_id") ? &root["eos_token_id"] : nullptr;
  if (!v || v->is_null()) return Status::success();
  Fields f(root, "");
  std::vector<int32_t> ids;
  read_eos(v, &ids, &f);
  INK_RETURN_IF_ERROR(f.status().with_context("[config] " + source + ": "));
  for (int32_t e : ids) {
    if (e >= c->vocab_size)
      return Status::error("[config] " + source + ": field 'eos_token_id' (" + std::to_string(e) +
                           ") is outside the vocabulary");
    if (std::find(c->eos_ids.begin(), c->eos_ids.end(), e) == c->eos_ids.end())
      c->eos_ids.push_back(e);
  }
  return Status::success();
}

}  // namespace

Result<ModelConfig> load_config(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  auto text = read_text_file(path);
  if (!text.ok()) return text.status().with_context("[config] ");
  auto c = parse_config(text.value(), path);
  if (!c.ok()) return c;
  // generation_config.json (what transformers' generate() stops on) may list more end ids, e.g.
  // the end of a document besides the end of an answer: generation stops at any of them.
  const std::string gen = model_dir + "/generation_config.json";
  if (std::filesystem::exists(gen)) {
    auto g = read_text_file(gen);
    if (!g.ok()) return g.status().with_context("[config] ");
    INK_RETURN_IF_ERROR(add_generation_eos(g.value(), gen, &c.value()));
  }
  return c;
}

}  // namespace inkling
