// How far fast numerics are from exact on a real checkpoint (DESIGN rule 12's quality bar): the
// same windows of token ids run teacher-forced through an engine in exact and one in fast
// numerics, by prefill (chunks of up to 256 tokens: the gemm kernels) and one token at a time
// (the decode kernels). Prints per path the mean KL(exact || fast) in nats per token, top-1
// agreement, max |logit diff| / max |logit| and the next-token loss of both.
//
//   numerics_ab MODEL_DIR IDS.bin [windows=16] [window_len=256] [threads=0] [--no-decode]
//   numerics_ab MODEL_DIR --random [windows] [window_len] ...   (ids drawn from the vocabulary)
//
// IDS.bin holds uint16 token ids (tools/demo_data.py's val.bin); windows start at evenly spaced
// offsets. The last line is one JSON object with every figure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "inkling/engine.h"

using namespace inkling;

namespace {

struct Stats {
  double kl = 0, max_diff = 0, max_ref = 0, nll_exact = 0, nll_fast = 0;
  int64_t positions = 0, agree = 0, scored = 0;

  // One position's logits of both modes; `next` the token that follows (-1: none).
  void add(const float* e, const float* f, int64_t V, int32_t next) {
    double me = -INFINITY, mf = -INFINITY;
    int64_t ae = 0, af = 0;
    for (int64_t v = 0; v < V; ++v) {
      if (e[v] > me) me = e[v], ae = v;
      if (f[v] > mf) mf = f[v], af = v;
      max_diff = std::max(max_diff, double(std::fabs(e[v] - f[v])));
      max_ref = std::max(max_ref, double(std::fabs(e[v])));
    }
    double se = 0, sf = 0;
    for (int64_t v = 0; v < V; ++v) se += std::exp(e[v] - me), sf += std::exp(f[v] - mf);
    const double lse = me + std::log(se), lsf = mf + std::log(sf);
    double kl = 0;
    for (int64_t v = 0; v < V; ++v) {
      const double lp = e[v] - lse, lq = f[v] - lsf;
      kl += std::exp(lp) * (lp - lq);
    }
    this->kl += kl;
    agree += ae == af;
    ++positions;
    if (next >= 0) {
      nll_exact += lse - e[next];
      nll_fast += lsf - f[next];
      ++scored;
    }
  }
  void print(const char* path) const {
    std::printf(
        "%-7s %6lld positions: KL %.3g nats/token, top-1 %.4f, max|diff|/max|logit| %.3g, "
        "loss exact %.5f fast %.5f (diff %+.2g)\n",
        path, static_cast<long long>(positions), kl / double(positions),
        double(agree) / double(positions), max_diff / std::max(max_ref, 1e-30),
        nll_exact / double(std::max<int64_t>(scored, 1)),
        nll_fast / double(std::max<int64_t>(scored, 1)),
        (nll_fast - nll_exact) / double(std::max<int64_t>(scored, 1)));
  }
  std::string json() const {
    char b[512];
    std::snprintf(b, sizeof b,
                  "{\"positions\": %lld, \"kl\": %.6g, \"top1\": %.6f, \"max_rel_diff\": %.6g, "
                  "\"loss_exact\": %.6f, \"loss_fast\": %.6f}",
                  static_cast<long long>(positions), kl / double(positions),
                  double(agree) / double(positions), max_diff / std::max(max_ref, 1e-30),
                  nll_exact / double(std::max<int64_t>(scored, 1)),
                  nll_fast / double(std::max<int64_t>(scored, 1)));
    return b;
  }
};

bool failed(const Status& st) {
  std::fprintf(stderr, "numerics_ab: %s\n", st.message().c_str());
  return false;
}

// Every position's logits of `ids`, by prefill or one token at a time.
bool logits(const Engine& eng, const std::vector<int32_t>& ids, bool decode,
            std::vector<float>* out) {
  auto s = eng.new_session();
  if (!decode) {
    auto l = s->prefill_all_logits(ids);
    if (!l.ok()) return failed(l.status());
    *out = std::move(*l);
    return true;
  }
  out->clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto l = i == 0 ? s->prefill(std::span<const int32_t>(&ids[0], 1)) : s->decode(ids[i]);
    if (!l.ok()) return failed(l.status());
    out->insert(out->end(), l->begin(), l->end());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: numerics_ab MODEL_DIR IDS.bin|--random [windows=16] [window_len=256] "
                 "[threads=0] [--no-decode]\n");
    return 2;
  }
  const std::string dir = argv[1], src = argv[2];
  std::vector<std::string> rest;
  bool decode = true;
  for (int i = 3; i < argc; ++i)
    std::strcmp(argv[i], "--no-decode") == 0 ? void(decode = false) : rest.push_back(argv[i]);
  const int windows = rest.size() > 0 ? std::atoi(rest[0].c_str()) : 16;
  const int len = rest.size() > 1 ? std::atoi(rest[1].c_str()) : 256;
  const int threads = rest.size() > 2 ? std::atoi(rest[2].c_str()) : 0;
  EngineOptions eo;
  eo.n_threads = threads;
  eo.numerics = Numerics::kExact;
  auto exact = Engine::load(dir, eo);
  eo.numerics = Numerics::kFast;
  auto fast = Engine::load(dir, eo);
  if (!exact.ok() || !fast.ok()) return failed(exact.ok() ? fast.status() : exact.status()) ? 0 : 1;
  const int64_t V = (*exact)->info().unpadded_vocab;
  std::vector<int32_t> all;
  if (src == "--random") {
    uint32_t r = 12345;
    for (int64_t i = 0; i < int64_t(windows) * len; ++i) {
      r = r * 1664525u + 1013904223u;
      all.push_back(int32_t((r >> 8) % uint32_t(V)));
    }
  } else {
    std::ifstream f(src, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + i, 2);
      all.push_back(int32_t(v));
    }
    if (all.size() < size_t(len) + 1) {
      std::fprintf(stderr, "numerics_ab: %s: fewer than %d ids\n", src.c_str(), len + 1);
      return 1;
    }
  }
  Stats pre, dec;
  const size_t span = all.size() - size_t(len);
  for (int w = 0; w < windows; ++w) {
    const size_t off = windows > 1 ? span * size_t(w) / size_t(windows - 1) : 0;
    std::vector<int32_t> ids(all.begin() + ptrdiff_t(off), all.begin() + ptrdiff_t(off + len));
    for (bool d : {false, true}) {
      if (d && !decode) continue;
      std::vector<float> le, lf;
      if (!logits(**exact, ids, d, &le) || !logits(**fast, ids, d, &lf)) return 1;
      Stats& st = d ? dec : pre;
      for (size_t p = 0; p < ids.size(); ++p)
        st.add(le.data() + p * size_t(V), lf.data() + p * size_t(V), V,
               p + 1 < ids.size() ? ids[p + 1] : -1);
    }
  }
  pre.print("prefill");
  if (decode) dec.print("decode");
  std::printf("{\"model\": \"%s\", \"windows\": %d, \"window_len\": %d, \"prefill\": %s%s%s}\n",
              dir.c_str(), windows, len, pre.json().c_str(), decode ? ", \"decode\": " : "",
              decode ? dec.json().c_str() : "");
  return 0;
}
