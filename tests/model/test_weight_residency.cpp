// populate_weight_pages (model/weight_residency.h): at load the mapped pages of every matrix the
// kernels read get page tables, except the embedding's (a row per token) and those whose
// load-time tiles replace them.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "../common/fixtures.h"
#include "base/resident.h"
#include "model/model.h"
#include "model/weight_residency.h"
#include "ops/formats.h"

namespace inkling {
namespace {

// Bytes of the matrices populate_weight_pages should cover (embedding and tiled ones aside).
uint64_t read_bytes(const Weights& w, uint64_t* embed) {
  uint64_t n = 0;
  for_each_matrix(w, [&](const char* group, const std::string&, const MatView& v) {
    if (std::strcmp(group, "embed") == 0)
      *embed += view_bytes(v);
    else if (!v.tiles)
      n += view_bytes(v);
  });
  return n;
}

TEST(WeightResidency, EveryReadMatrixButTheEmbedding) {
  if (memory_available() < (uint64_t(2) << 30)) GTEST_SKIP() << "less than 2 GiB available";
  for (const char* fx : {"quant_mlx4", "quant_nvfp4"}) {
    const std::string dir = testing::fixture_dir(fx) + "/model";
    if (!std::filesystem::exists(dir + "/config.json")) continue;
    auto m = Model::load(dir);
    ASSERT_TRUE(m.ok()) << m.status().message();
    Weights& w = (*m)->weights;
    uint64_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files += e.file_size();
    for (Numerics n : {Numerics::kExact, Numerics::kFast}) {
      bind_numerics(w, n);
      uint64_t embed = 0;
      const uint64_t want = read_bytes(w, &embed);
      const uint64_t got = populate_weight_pages(w, 2);
      if (got == 0) GTEST_SKIP() << "the kernel has no MADV_POPULATE_READ";
      EXPECT_EQ(w.resident_bytes, got) << "what bind_numerics made resident";
      // Whole pages around the matrices read, within the files, without the embedding's bulk.
      std::printf(
          "[residency] %s %s: %llu bytes populated, %llu read by the kernels, %llu embedding, "
          "files %llu\n",
          fx, n == Numerics::kFast ? "fast" : "exact", (unsigned long long)got,
          (unsigned long long)want, (unsigned long long)embed, (unsigned long long)files);
      EXPECT_GE(got, want) << fx;
      EXPECT_LE(got, files + 4096 * 64) << fx;
      if (embed > (uint64_t(64) << 10)) {
        EXPECT_LT(got, files - embed / 2) << fx;
      }
    }
  }
}

}  // namespace
}  // namespace inkling
