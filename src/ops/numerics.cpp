// Names of the numerics modes (include/inkling/numerics.h).
#include "inkling/numerics.h"

#include <string>

namespace inkling {

const char* numerics_name(Numerics n) {
  return n == Numerics::kFast ? "fast" : "exact";
}

Result<Numerics> parse_numerics(std::string_view name) {
  if (name == "fast") return Numerics::kFast;
  if (name == "exact") return Numerics::kExact;
  return Status::error("numerics '" + std::string(name) + "': expected fast or exact");
}

}  // namespace inkling
