// What `inkling quantize` makes of each module group: the per-group quantization specs, the named
// recipes, and the parsing of --bits/--group-size/--modules/--override values. Pure data and
// parsing; which module a spec lands on is quantize_plan's business.
#pragma once

#include "base/glob.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inkling/status.h"

namespace inkling::quant {

// Module groups of the output (mlx-vlm modules): the unit recipes and --modules speak of. kMtp
// holds the matrices of the MTP draft depths, planned only with --mtp quantize (not a --modules
// group: --mtp decides whether they are quantized, the recipe at which spec).
enum class Group : uint8_t { kEmbed, kHead, kAttention, kDense, kRouter, kExperts, kShared, kMtp };
constexpr int kGroupCount = 8;

const char* group_key(Group g);    // "embed", "head", "attention", "dense", "router", ...
const char* group_label(Group g);  // "embedding", "lm_head", "attention", "dense MLP", ...
std::optional<Group> parse_group(const std::string& key);

// One module's storage in the output: MLX affine (bits, group) or kept as floats.
struct QuantSpec {
  bool quantized = false;
  int bits = 0, group = 0;

  static QuantSpec affine(int bits, int group) { return {true, bits, group}; }
  std::string str() const;  // "q4/g64" or "float"
  bool operator==(const QuantSpec&) const = default;
};

// A named recipe: a spec per group, where kMain stands for the main spec (--bits/--group-size,
// or the recipe's own default for them).
struct Recipe {
  enum Kind : uint8_t { kKeep, kMain, kFixed };
  struct Entry {
    Kind kind = kKeep;
    int bits = 0, group = 0;  // kFixed only
  };
  const char* name;
  const char* summary;
  int main_bits, main_group;  // defaults of --bits / --group-size under this recipe
  Entry groups[kGroupCount];  // indexed by Group
};

std::span<const Recipe> recipes();
const Recipe* find_recipe(const std::string& name);
std::string recipe_names();  // "uniform, experts-only, ..."

// Usage errors carry exit code 2; their messages name the option.
Status check_bits(int bits, const std::string& what);
Status check_group(int group, const std::string& what);

// --override PATTERN=SPEC: PATTERN is a group key ("attention", "experts", ...) or a glob over
// module paths ("language_model.model.layers.*.mlp.switch_mlp.down_proj"); SPEC is "off"
// (kept as floats), "BITS" (with the main group size) or "BITS:GROUP".
struct Override {
  std::string text;  // as given, for messages
  std::string pattern;
  bool keep = false;
  int bits = 0, group = 0;  // group 0: the main group size
};
Result<Override> parse_override(const std::string& text);

// --modules LIST: comma-separated group keys or "all".
Result<std::vector<Group>> parse_modules(const std::string& text);

}  // namespace inkling::quant
