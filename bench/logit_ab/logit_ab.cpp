// The logit error the AVX512-VNNI affine kernel (x in int8 parts, ops/quant_affine_vnni.h) adds
// over the exact kernels, on a real checkpoint: the same teacher-forced token ids run one token
// at a time (the decode kernels) through an engine loaded with the kernel and one loaded without
// it (INKLING_NO_VNNI's path), then a greedy continuation from the same prompt in both. Prints
// max |logit diff| / max |logit| over every position, argmax agreement and greedy identity.
//
//   logit_ab MODEL_DIR [tokens=16] [greedy=16] [threads=0]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "inkling/engine.h"
#include "ops/quant_affine_vnni.h"

using namespace inkling;

namespace {

struct Run {
  std::vector<std::vector<float>> logits;  // per teacher-forced position
  std::vector<int32_t> greedy;
};

int32_t argmax(std::span<const float> v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

bool run(const std::string& dir, bool vnni, std::vector<int32_t> ids, int greedy, int threads,
         Run* out) {
  set_affine_vnni_enabled(vnni);  // read when the engine binds its kernels (load)
  EngineOptions opts;
  opts.n_threads = threads;
  auto eng = Engine::load(dir, opts);
  if (!eng.ok()) {
    std::fprintf(stderr, "logit_ab: %s\n", eng.status().message().c_str());
    return false;
  }
  for (int32_t& id : ids) id = int32_t(id % (*eng)->info().unpadded_vocab);
  auto s = (*eng)->new_session();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto l = i == 0 ? s->prefill(std::span<const int32_t>(&ids[0], 1)) : s->decode(ids[i]);
    if (!l.ok()) {
      std::fprintf(stderr, "logit_ab: %s\n", l.status().message().c_str());
      return false;
    }
    out->logits.emplace_back(l->begin(), l->end());
  }
  int32_t next = argmax(out->logits.back());
  for (int g = 0; g < greedy; ++g) {
    out->greedy.push_back(next);
    auto l = s->decode(next);
    if (!l.ok()) return false;
    next = argmax(*l);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: logit_ab MODEL_DIR [tokens=16] [greedy=16] [threads=0]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 16, greedy = argc > 3 ? std::atoi(argv[3]) : 16;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 0;
  if (!affine_vnni_available()) {
    std::printf("logit_ab: this CPU has no AVX512-VNNI: nothing to compare\n");
    return 0;
  }
  std::vector<int32_t> ids;
  uint32_t r = 12345;
  for (int i = 0; i < n; ++i) {
    r = r * 1664525u + 1013904223u;
    ids.push_back(int32_t(r >> 8));  // taken modulo the vocabulary
  }
  Run a, b;
  if (!run(dir, true, ids, greedy, threads, &a) || !run(dir, false, ids, greedy, threads, &b))
    return 1;
  double max_diff = 0, max_ref = 0;
  int agree = 0;
  for (size_t p = 0; p < a.logits.size(); ++p) {
    for (size_t v = 0; v < a.logits[p].size(); ++v) {
      max_diff = std::max(max_diff, double(std::fabs(a.logits[p][v] - b.logits[p][v])));
      max_ref = std::max(max_ref, double(std::fabs(b.logits[p][v])));
    }
    agree += argmax(a.logits[p]) == argmax(b.logits[p]);
  }
  const bool same = a.greedy == b.greedy;
  std::printf(
      "%s: %d teacher-forced positions: max|diff| %.3g, max|logit| %.3g, ratio %.3g, argmax "
      "%d/%d; greedy %d tokens %s\n",
      dir.c_str(), n, max_diff, max_ref, max_diff / std::max(max_ref, 1e-30), agree, n, greedy,
      same ? "identical" : "DIFFER");
  set_affine_vnni_enabled(true);
  return same ? 0 : 1;
}
