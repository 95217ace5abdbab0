// Parsing of the quantization dicts (MLX `quantization` / `quantization_config` with per-module
// overrides, ModelOpt `hf_quant_config.json` or an HF `quantization_config` of quant_method
// "modelopt") into QuantConfig, and the per-module lookup binding uses.
#include "model/quant_config.h"

#include "base/glob.h"
#include "base/json_limits.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace inkling {

using nlohmann::json;

const char* quant_mode_name(QuantMode m) {
  switch (m) {
    case QuantMode::kNone:
      return "none";
    case QuantMode::kAffine:
      return "affine";
    case QuantMode::kNvfp4:
      return "nvfp4";
    case QuantMode::kMxfp4:
      return "mxfp4";
    case QuantMode::kMxfp8:
      return "mxfp8";
    case QuantMode::kMixed:
      return "mixed";
    case QuantMode::kOther:
      return "other";
  }
  return "?";
}

namespace {

QuantMode parse_mode(const std::string& s) {
  if (s == "affine") return QuantMode::kAffine;
  if (s == "nvfp4" || s == "NVFP4") return QuantMode::kNvfp4;
  if (s == "mxfp4") return QuantMode::kMxfp4;
  return QuantMode::kOther;
}

Status bad(const std::string& file, const std::string& what) {
  return Status::error("[load] " + file + ": " + what);
}

Status read_int(const json& obj, const char* key, int* out, const std::string& file,
                const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::success();
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > 1024)
    return bad(file, where + "." + key + " must be a positive integer, got " + it->dump());
  *out = int(it->get<int64_t>());
  return Status::success();
}

// An MLX dict: {group_size, bits, mode?, <module path>: false | {group_size?, bits?, mode?}}.
Status parse_mlx(const json& q, const std::string& file, const std::string& where,
                 QuantConfig* out) {
  out->mode = QuantMode::kAffine;
  if (auto it = q.find("mode"); it != q.end() && it->is_string())
    out->mode = parse_mode(it->get<std::string>());
  INK_RETURN_IF_ERROR(read_int(q, "bits", &out->bits, file, where));
  INK_RETURN_IF_ERROR(read_int(q, "group_size", &out->group, file, where));
  out->source = file + " " + where;
  for (const auto& [key, v] : q.items()) {
    if (v.is_boolean()) {
      if (!v.get<bool>()) out->overrides[key] = std::nullopt;
      // `true` keeps the defaults: nothing to record.
    } else if (v.is_object()) {
      QuantConfig::Override o;
      o.mode = out->mode;
      if (auto it = v.find("mode"); it != v.end() && it->is_string())
        o.mode = parse_mode(it->get<std::string>());
      INK_RETURN_IF_ERROR(read_int(v, "bits", &o.bits, file, where + "['" + key + "']"));
      INK_RETURN_IF_ERROR(read_int(v, "group_size", &o.group, file, where + "['" + key + "']"));
      out->overrides[key] = o;
    }
  }
  return Status::success();
}

// The modules a quantization config leaves unquantized, and where the config came from.
Status read_excludes(const json& q, const std::string& file, const std::string& where,
                     QuantConfig* out) {
  for (const char* key : {"exclude_modules", "ignore", "modules_to_not_convert"}) {
    auto it = q.find(key);
    if (it == q.end() || !it->is_array()) continue;
    for (const auto& m : *it)
      if (m.is_string()) out->exclude.push_back(m.get<std::string>());
  }
  out->source = file + " " + where;
  return Status::success();
}

// ModelOpt: {quant_algo: "NVFP4", group_size: 16, exclude_modules: [...]} (hf_quant_config.json's
// "quantization" object, or an HF quantization_config with quant_method "modelopt").
Status parse_modelopt(const json& q, const std::string& file, const std::string& where,
                      QuantConfig* out) {
  const auto algo = q.find("quant_algo");
  if (algo == q.end() || !algo->is_string())
    return bad(file, where + ".quant_algo is missing (expected \"NVFP4\")");
  const std::string a = algo->get<std::string>();
  if (a == "MXFP8" || a == "MIXED_PRECISION") {  // the companion tensors decide per matrix
    out->mode = a == "MXFP8" ? QuantMode::kMxfp8 : QuantMode::kMixed;
    return read_excludes(q, file, where, out);
  }
  if (a != "NVFP4")
    return bad(file, where + ".quant_algo " + algo->dump() +
                         " is not supported (ModelOpt NVFP4, MXFP8 or MIXED_PRECISION load)");
  out->mode = QuantMode::kNvfp4;
  out->bits = 4;
  out->group = 16;
  INK_RETURN_IF_ERROR(read_int(q, "group_size", &out->group, file, where));
  if (out->group != 16)
    return bad(file, where + ".group_size " + std::to_string(out->group) +
                         " is not supported (NVFP4 uses 16)");
  return read_excludes(q, file, where, out);
}

// A dict found in config.json: MLX unless it names a ModelOpt quant_method.
Status parse_config_dict(const json& q, const std::string& file, const std::string& where,
                         QuantConfig* out) {
  if (!q.is_object()) return bad(file, where + " must be an object, got " + q.dump());
  if (auto m = q.find("quant_method"); m != q.end() && m->is_string()) {
    const std::string method = m->get<std::string>();
    if (method == "modelopt") return parse_modelopt(q, file, where, out);
    // transformers' MXFP8 / fine-grained FP8 (Inkling 2 Small): F8_E4M3 values with E8M0 scales.
    if (method == "mxfp8" || method == "fp8") {
      out->mode = QuantMode::kMxfp8;
      return read_excludes(q, file, where, out);
    }
    if (method != "mlx")
      return bad(file, where + ".quant_method \"" + method + "\" is not supported");
  }
  return parse_mlx(q, file, where, out);
}

}  // namespace

ModuleQuant QuantConfig::lookup(const std::string& module) const {
  ModuleQuant r;
  if (mode == QuantMode::kNone) return r;
  auto find_override = [&](const std::string& key) { return overrides.find(key); };
  auto it = find_override(module);
  // A fused qkvr_proj follows an override written for its q_proj (seed rule 8).
  const std::string fused = ".qkvr_proj";
  if (it == overrides.end() && module.size() > fused.size() &&
      module.compare(module.size() - fused.size(), fused.size(), fused) == 0)
    it = find_override(module.substr(0, module.size() - fused.size()) + ".q_proj");
  if (it != overrides.end()) {
    r.stated = true;
    r.why = "override '" + it->first + "' in " + source;
    if (!it->second) return r;  // false: unquantized
    r.quantized = true;
    r.mode = it->second->mode;
    r.bits = it->second->bits ? it->second->bits : bits;
    r.group = it->second->group ? it->second->group : group;
    return r;
  }
  for (const std::string& p : exclude) {
    if (glob_match(p.c_str(), module.c_str()) || glob_match((p + ".*").c_str(), module.c_str()) ||
        (module.size() > p.size() && module.compare(0, p.size(), p) == 0 &&
         module[p.size()] == '.')) {
      r.stated = true;
      r.why = "exclude_modules entry '" + p + "' in " + source;
      return r;
    }
  }
  // The defaults apply to modules that carry quantization sidecars; shapes decide the rest.
  r.mode = mode;
  r.bits = bits;
  r.group = group;
  r.why = source;
  return r;
}

Result<QuantConfig> parse_quant_config(const std::string& config_json,
                                       const std::string& hf_quant_json, const std::string& dir) {
  QuantConfig qc;
  const std::string cfg_file = dir + "/config.json";
  INK_RETURN_IF_ERROR(check_json_depth(config_json, "[quant] " + cfg_file));
  const json cfg = json::parse(config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) return bad(cfg_file, "not a JSON object");
  // Top level first (mlx-lm / mlx-vlm write it there), then text_config.
  for (const json* obj : {&cfg, cfg.contains("text_config") ? &cfg["text_config"] : nullptr}) {
    if (!obj || !obj->is_object()) continue;
    const std::string pre = obj == &cfg ? "" : "text_config.";
    for (const char* key : {"quantization", "quantization_config"}) {
      auto it = obj->find(key);
      if (it == obj->end() || it->is_null()) continue;
      INK_RETURN_IF_ERROR(parse_config_dict(*it, cfg_file, pre + key, &qc));
      return qc;
    }
  }
  if (!hf_quant_json.empty()) {
    const std::string file = dir + "/hf_quant_config.json";
    INK_RETURN_IF_ERROR(check_json_depth(hf_quant_json, "[quant] " + file));
    const json h = json::parse(hf_quant_json, nullptr, false);
    if (h.is_discarded() || !h.is_object()) return bad(file, "not a JSON object");
    auto it = h.find("quantization");
    const json& q = (it != h.end() && it->is_object()) ? *it : h;
    INK_RETURN_IF_ERROR(
        parse_modelopt(q, file, it != h.end() ? "quantization" : "(top level)", &qc));
  }
  return qc;
}

Result<QuantConfig> load_quant_config(const std::string& model_dir) {
  auto cfg = read_text_file(model_dir + "/config.json");
  if (!cfg.ok()) return cfg.status().with_context("[load] ");
  std::string hf;
  const std::string hf_path = model_dir + "/hf_quant_config.json";
  if (std::filesystem::exists(hf_path)) {
    auto t = read_text_file(hf_path);
    if (!t.ok()) return t.status().with_context("[load] ");
    hf = std::move(t).value();
  }
  return parse_quant_config(cfg.value(), hf, model_dir);
}

}  // namespace inkling
