// The recipe table and the parsers of quantize's module options.
#include "quantize/quantize_recipe.h"

#include <cstdlib>

#include "ops/affine_quantize.h"

namespace inkling::quant {

namespace {

struct GroupNames {
  Group group;
  const char* key;
  const char* label;
};
constexpr GroupNames kGroups[kGroupCount] = {
    {Group::kEmbed, "embed", "embedding"},         {Group::kHead, "head", "lm_head"},
    {Group::kAttention, "attention", "attention"}, {Group::kDense, "dense", "dense MLP"},
    {Group::kRouter, "router", "router"},          {Group::kExperts, "experts", "routed experts"},
    {Group::kShared, "shared", "shared experts"},  {Group::kMtp, "mtp", "MTP depths"},
};

constexpr Recipe::Entry K{Recipe::kKeep, 0, 0};
constexpr Recipe::Entry M{Recipe::kMain, 0, 0};
constexpr Recipe::Entry Q8{Recipe::kFixed, 8, 64};

// Columns: embed, head, attention, dense, router, experts, shared, mtp. The router stays floats in
// every recipe: mlx-vlm holds it as a plain array (mlp.gate_weight), not a quantizable Linear.
// The MTP depths (used only with --mtp quantize) take the main spec, or 8-bit g64 in the recipes
// that keep every module but the routed experts at 8 bits.
constexpr Recipe kRecipes[] = {
    {"uniform",
     "every quantizable module at the main spec (mlx-vlm convert's default)",
     4,
     64,
     {M, M, M, M, K, M, M, M}},
    {"auto",
     "a width per module group and layer (2-8 bits or floats) with the least measured KL that "
     "fits --memory-gb at --context tokens (or --weights-gb); measured on --calibrate TEXT",
     4,
     64,
     {M, M, M, M, K, M, M, Q8}},
    {"experts-only",
     "routed experts at the main spec, everything else kept as floats",
     4,
     64,
     {K, K, K, K, K, M, K, M}},
    {"mlp-only",
     "dense MLP, routed and shared experts at the main spec; attention, embedding and head "
     "kept as floats (the mlx-community Inkling-Small-mlx-4bit split)",
     4,
     64,
     {K, K, K, M, K, M, M, M}},
    {"mixed",
     "routed experts at the main spec, every other module 8-bit g64",
     4,
     64,
     {Q8, Q8, Q8, Q8, K, M, Q8, Q8}},
    {"fit-128gb",
     "routed experts 3-bit g64 (the main spec), every other module 8-bit g64: Inkling-Small "
     "weighs 110.9 GiB and runs a 32k context in 113 GiB (see --dry-run)",
     3,
     64,
     {Q8, Q8, Q8, Q8, K, M, Q8, Q8}},
    // Inkling 2: every attention matrix of Mini's looped core is read once per pass (three times
    // per token), so it is 8-bit in these, not kept as floats.
    {"mini-16gb",
     "Inkling 2 Mini for 16 GB: routed experts 3-bit g64 (the main spec), every other module "
     "8-bit g64: 11.6 GiB, 14.0 GiB to run a 32k context (see --dry-run)",
     3,
     64,
     {Q8, Q8, Q8, Q8, K, M, Q8, Q8}},
    {"mini-24gb",
     "Inkling 2 Mini for 24 GB: routed experts 5-bit g64 (the main spec), every other module "
     "8-bit g64: 17.3 GiB, 19.7 GiB to run a 32k context",
     5,
     64,
     {Q8, Q8, Q8, Q8, K, M, Q8, Q8}},
    {"small-256gb",
     "Inkling 2 Small for 256 GB: routed experts 3-bit g64 (the main spec), every other module "
     "8-bit g64: 245.9 GiB, 248.3 GiB to run a 32k context",
     3,
     64,
     {Q8, Q8, Q8, Q8, K, M, Q8, Q8}},
};

bool parse_int(const std::string& s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::atoi(s.c_str());
  return true;
}

}  // namespace

const char* group_key(Group g) {
  return kGroups[size_t(g)].key;
}
const char* group_label(Group g) {
  return kGroups[size_t(g)].label;
}
std::optional<Group> parse_group(const std::string& key) {
  for (const auto& g : kGroups)
    if (key == g.key) return g.group;
  return std::nullopt;
}

std::string QuantSpec::str() const {
  return quantized ? "q" + std::to_string(bits) + "/g" + std::to_string(group) : "float";
}

std::span<const Recipe> recipes() {
  return kRecipes;
}

const Recipe* find_recipe(const std::string& name) {
  for (const Recipe& r : kRecipes)
    if (name == r.name) return &r;
  return nullptr;
}

std::string recipe_names() {
  std::string out;
  for (const Recipe& r : kRecipes) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

Status check_bits(int bits, const std::string& what) {
  if (affine_bits_supported(bits)) return Status::success();
  return Status::error(what + ": " + std::to_string(bits) +
                       " bits is not an MLX affine width (use 2, 3, 4, 5, 6 or 8)");
}

Status check_group(int group, const std::string& what) {
  if (affine_group_supported(group)) return Status::success();
  return Status::error(what + ": group size " + std::to_string(group) +
                       " is not an MLX affine group (use 32, 64 or 128)");
}

Result<Override> parse_override(const std::string& text) {
  Override o;
  o.text = text;
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return Status::error("--override '" + text +
                         "': expected PATTERN=SPEC, SPEC being off, BITS or BITS:GROUP");
  o.pattern = text.substr(0, eq);
  const std::string spec = text.substr(eq + 1);
  const std::string what = "--override '" + text + "'";
  if (spec == "off" || spec == "float" || spec == "none") {
    o.keep = true;
    return o;
  }
  const size_t colon = spec.find(':');
  const std::string b = spec.substr(0, colon);
  if (!parse_int(b, &o.bits))
    return Status::error(what + ": '" + spec + "' is not off, BITS or BITS:GROUP");
  INK_RETURN_IF_ERROR(check_bits(o.bits, what));
  if (colon != std::string::npos) {
    if (!parse_int(spec.substr(colon + 1), &o.group))
      return Status::error(what + ": '" + spec + "' is not off, BITS or BITS:GROUP");
    INK_RETURN_IF_ERROR(check_group(o.group, what));
  }
  return o;
}

Result<std::vector<Group>> parse_modules(const std::string& text) {
  std::vector<Group> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string key =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (key == "all") {
      for (const auto& g : kGroups)
        if (g.group != Group::kRouter && g.group != Group::kMtp) out.push_back(g.group);
    } else if (key == "mtp") {
      return Status::error(
          "--modules: the MTP depths are quantized with --mtp quantize (at the recipe's spec; "
          "--override mtp=SPEC changes it)");
    } else if (key == "router") {
      return Status::error(
          "--modules: the router is never quantized (mlx-vlm holds it as a "
          "plain array, mlp.gate_weight)");
    } else if (auto g = parse_group(key)) {
      out.push_back(*g);
    } else {
      return Status::error("--modules: '" + key +
                           "' is not a module group (use all or a comma-separated list of "
                           "embed, head, attention, dense, experts, shared)");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace inkling::quant
