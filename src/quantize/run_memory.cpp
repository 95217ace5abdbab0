// run_memory(): the cache slots of the config summed as the engine allocates them.
#include "quantize/run_memory.h"

#include <algorithm>
#include <vector>

#include "model/model.h"

namespace inkling::quant {

RunMemory run_memory(const ModelConfig& c, int64_t context) {
  RunMemory m;
  m.context = context;
  m.ring = std::min<int64_t>(context, c.window - 1 + kRunPrefillChunk);
  for (const LayerSpec& l : c.cache_slots()) {
    const double row = 2.0 * l.n_kv_heads * l.head_dim * 4;  // k and v, f32
    if (l.sliding) {
      m.sliding += row * double(m.ring);
      ++m.n_sliding;
    } else {
      m.global_per_token += row;
      ++m.n_global;
    }
    m.conv += double(c.conv_k - 1) * (2.0 * l.n_kv_heads * l.head_dim + 2.0 * c.hidden) * 4;
  }
  m.scratch = double(Scratch::footprint(c, kRunPrefillChunk));
  return m;
}

}  // namespace inkling::quant
