// The seam between an MoE layer and the place its routed experts run. moe_block() hands a layer's
// routing to the ExpertExecutor attached to the layer's weights (expert parallelism, src/dist);
// without one every expert runs in this process (model/moe.cpp). Owners of experts elsewhere use
// run_routed_expert() and add_in_gate_order() so the result is bit-identical to one process.
#pragma once

#include <cstdint>
#include <vector>

namespace inkling {

struct MoeWeights;
struct SwiGluWeights;
class ThreadPool;

class ExpertExecutor {
 public:
  virtual ~ExpertExecutor() = default;
  // out [T, H] (overwritten) = for each token t, the sum over its k slots j in gate order
  // (ascending expert id, as route() leaves them) of expert idx[t, j] applied to row t of m,
  // times weight[t, j]. `w.layer` names the layer; `w.routed` holds the views of the experts
  // this process owns. Never returns on a failure elsewhere (it reports and exits).
  virtual void run(const MoeWeights& w, const float* m, int64_t T, int64_t H, const int32_t* idx,
                   const float* weight, int k, float* out, ThreadPool* pool) = 0;
};

// Buffers of one expert's gathered rows (grown on demand, reused).
struct ExpertBuffers {
  std::vector<float> in, gu, out;  // [n, H], [n, 2I], [n, H]
  std::vector<int32_t> slots;      // [n] slot t * k + j of each gathered row
};

// Runs expert `e` once over every row of m [T, H] whose routing idx [T, k] chose it, in ascending
// row order (the same rows, order and kernel as the single-process MoE), and writes its
// unweighted output row for each such slot s = t * k + j to y + place[s] * H. Returns the rows
// it ran.
int64_t run_routed_expert(const SwiGluWeights& w, int32_t e, const float* m, int64_t T, int64_t H,
                          const int32_t* idx, int k, ExpertBuffers& b, float* y,
                          const int32_t* place, ThreadPool* pool);

// out [T, H] = sum over j of y[t * k + j] * weight[t * k + j], j ascending, starting from 0:
// per token the same additions in the same order as the single-process expert loop.
void add_in_gate_order(const float* y, const float* weight, int64_t T, int64_t H, int k,
                       float* out);

}  // namespace inkling
