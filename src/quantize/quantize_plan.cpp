// make_plan(): the mlx-vlm tensor list of an Inkling config in file order (layer by layer, as
// the sources are laid out), the spec of every module, and the quantization block describing it.
#include "quantize/quantize_plan.h"

#include "quantize/quantize_layout.h"

namespace inkling::quant {

std::vector<int64_t> Module::shape(int64_t last) const {
  std::vector<int64_t> s;
  if (n > 0) s.push_back(n);
  s.push_back(rows);
  s.push_back(last);
  return s;
}

namespace {

QuantSpec recipe_spec(const Recipe& r, Group g, const QuantSpec& main) {
  const Recipe::Entry& e = r.groups[size_t(g)];
  switch (e.kind) {
    case Recipe::kKeep:
      return {};
    case Recipe::kMain:
      return main;
    case Recipe::kFixed:
      return QuantSpec::affine(e.bits, e.group);
  }
  return {};
}

}  // namespace

Result<Plan> make_plan(const ModelConfig& c, const PlanOptions& o) {
  INK_CHECK(o.recipe != nullptr);
  Plan plan;
  plan.main = QuantSpec::affine(o.bits, o.group);
  plan.recipe = o.recipe->name;
  plan.items = c.family == Family::kInkling2 ? layout_inkling2(c) : layout_inkling(c, o.mtp);
  for (PlanItem& item : plan.items) {
    Module* m = std::get_if<Module>(&item);
    if (!m) continue;
    m->spec = recipe_spec(*o.recipe, m->group, plan.main);
    if (o.modules && m->group != Group::kRouter && m->group != Group::kMtp) {
      bool listed = false;
      for (Group g : *o.modules) listed |= g == m->group;
      m->spec = !listed ? QuantSpec{} : (m->spec.quantized ? m->spec : plan.main);
    }
  }
  for (const Override& ov : o.overrides) {
    int matched = 0;
    for (PlanItem& item : plan.items) {
      Module* m = std::get_if<Module>(&item);
      if (!m ||
          !(ov.pattern == group_key(m->group) || glob_match(ov.pattern.c_str(), m->path.c_str())))
        continue;
      if (m->group == Group::kRouter && !ov.keep)
        return Status::error("--override '" + ov.text + "' matches the router " + m->path +
                             ", which is never quantized (mlx-vlm holds it as a plain array)");
      m->spec = ov.keep ? QuantSpec{} : QuantSpec::affine(ov.bits, ov.group ? ov.group : o.group);
      ++matched;
    }
    if (matched == 0)
      return Status::error("--override '" + ov.text + "': pattern '" + ov.pattern +
                           "' matches no module of this model (use a group: embed, head, "
                           "attention, dense, experts, shared, mtp (with --mtp quantize); or a "
                           "glob over module paths such as "
                           "language_model.model.layers.*.self_attn.qkvr_proj)");
  }
  // What the shapes allow: a row length (and a shared expert's width) the group divides.
  for (PlanItem& item : plan.items) {
    Module* m = std::get_if<Module>(&item);
    if (!m || !m->spec.quantized) continue;
    const int g = m->spec.group;
    if (m->cols % g != 0)
      m->kept_why = "row length " + std::to_string(m->cols) + " is not a multiple of group " +
                    std::to_string(g);
    else if (m->split > 0 && m->split % g != 0)
      m->kept_why = "expert width " + std::to_string(m->split) + " is not a multiple of group " +
                    std::to_string(g);
    if (!m->kept_why.empty()) m->spec = QuantSpec{};
  }
  return plan;
}

uint64_t module_bytes(const Module& m, DType float_dtype) {
  const uint64_t rows = uint64_t(m.total_rows()), fs = dtype_size(float_dtype);
  if (!m.spec.quantized) return rows * uint64_t(m.cols) * fs;
  const uint64_t codes = uint64_t(m.cols) * uint64_t(m.spec.bits) / 8;
  const uint64_t sidecars = 2 * uint64_t(m.cols / m.spec.group) * fs;
  return rows * (codes + sidecars);
}

nlohmann::ordered_json quantization_json(const Plan& plan) {
  nlohmann::ordered_json q = {
      {"group_size", plan.main.group}, {"bits", plan.main.bits}, {"mode", "affine"}};
  for (const PlanItem& item : plan.items) {
    const Module* m = std::get_if<Module>(&item);
    if (!m || m->bare) continue;
    if (!m->spec.quantized) {
      q[m->path] = false;
    } else if (m->spec != plan.main || (m->total_rows() * m->cols) % 64 != 0) {
      q[m->path] = {{"group_size", m->spec.group}, {"bits", m->spec.bits}, {"mode", "affine"}};
    }
  }
  return q;
}

}  // namespace inkling::quant
