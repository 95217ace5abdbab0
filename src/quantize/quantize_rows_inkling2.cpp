// RowSource::of_inkling2(): which bound views of an Inkling 2 source make up each module of
// layout_inkling2(): one view per attention linear, the routed experts stacked, the head cut to
// the unpadded vocabulary (the original layout stores padded rows).
#include "quantize/quantize_sources.h"

#include <utility>

namespace inkling::quant {

Result<RowSource> RowSource::of_inkling2(const Source& src, const Module& m) {
  RowSource rs;
  rs.cols_ = m.cols;
  const Weights& w = src.weights;
  if (m.role == Role::kEmbed) {
    rs.append(w.embed);
    return std::move(rs).checked(m);
  }
  if (m.role == Role::kHead) {
    rs.append(w.lm_head.rows > m.rows ? w.lm_head.slice_rows(0, m.rows) : w.lm_head);
    return std::move(rs).checked(m);
  }
  if (m.layer < 0 || size_t(m.layer) >= w.v2.layers.size())
    return Status::error("[quantize] " + m.path + ": the source has no layer " +
                         std::to_string(m.layer));
  const Inkling2Layer& L = w.v2.layers[size_t(m.layer)];
  // One view per attention linear and the router; the experts' matrices stacked.
  static constexpr std::pair<Role, MatView Inkling2Layer::*> kViews[] = {
      {Role::kQ, &Inkling2Layer::q},       {Role::kK, &Inkling2Layer::k},
      {Role::kV, &Inkling2Layer::v},       {Role::kR, &Inkling2Layer::r},
      {Role::kSink, &Inkling2Layer::sink}, {Role::kOGate, &Inkling2Layer::gate},
      {Role::kO, &Inkling2Layer::o},       {Role::kKDyn, &Inkling2Layer::k_dyn},
      {Role::kVDyn, &Inkling2Layer::v_dyn}};
  static constexpr std::pair<Role, MatView SwiGluWeights::*> kExperts[] = {
      {Role::kExpertGate, &SwiGluWeights::gate},
      {Role::kExpertUp, &SwiGluWeights::up},
      {Role::kExpertDown, &SwiGluWeights::down}};
  for (const auto& [role, view] : kViews)
    if (m.role == role) rs.append(L.*view);
  for (const auto& [role, pick] : kExperts)
    if (m.role == role)
      for (const SwiGluWeights& e : L.moe.routed) rs.append(e.*pick);
  if (m.role == Role::kRouter) rs.append(L.moe.router);
  if (rs.bands_.empty())
    return Status::error("[quantize] " + m.path + ": not a module of an Inkling 2 model");
  return std::move(rs).checked(m);
}

}  // namespace inkling::quant
