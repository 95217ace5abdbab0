// ImportanceCollector (per-column input statistics of every product, keyed by file position) and
// the importance-matrix file: sums checked by hand, found from a row slice, a fused half and a
// second mapping of the same file; the file round-trips and damage is one error naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/safetensors.h"
#include "base/safetensors_writer.h"
#include "ops/matmul.h"
#include "quantize/imatrix.h"
#include "quantize/importance.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string tmp_path(const std::string& name) {
  return (fs::temp_directory_path() /
          ("inkling_importance_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A safetensors file holding one F32 [rows, cols] matrix, opened (mapped) as a store.
TensorStore matrix_file(const std::string& path, int64_t rows, int64_t cols) {
  std::vector<float> w(size_t(rows * cols));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7) - 3.f;
  auto wr = SafetensorsWriter::create(path, {{"w", DType::F32, {rows, cols}}});
  EXPECT_TRUE(wr.ok());
  EXPECT_TRUE(wr.value()->write(0, 0, w.data(), w.size() * 4));
  EXPECT_TRUE(wr.value()->finish());
  auto store = TensorStore::from_files({path});
  EXPECT_TRUE(store.ok()) << store.status().message();
  return std::move(store).value();
}

MatView view_of(const TensorStore& s) {
  const TensorInfo* t = s.find("w");
  MatView v;
  v.dtype = DType::F32;
  v.data = t->data;
  v.rows = t->shape[0];
  v.cols = t->shape[1];
  v.row_stride = v.cols;
  return v;
}

TEST(Importance, SumsPerColumnAndFindsSlicesHalvesAndOtherMappings) {
  const std::string path = tmp_path("m.safetensors");
  const TensorStore store = matrix_file(path, 8, 16);
  const MatView w = view_of(store);
  std::vector<float> x(3 * 20), y(3 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(int(i % 11) - 5);
  ImportanceCollector c;
  {
    ProductObserverScope scope(&c);
    matmul(x.data(), 3, 20, w, y.data(), 8, nullptr);  // ldx 20: only 16 columns are read
    matmul(x.data(), 1, 20, w, y.data(), 8, nullptr);
  }
  matmul(x.data(), 3, 20, w, y.data(), 8, nullptr);  // no scope: not seen
  const ProductStats* s = c.find(w);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->tokens, 4);
  for (int64_t col = 0; col < 16; ++col) {
    double want = 0;
    for (int t : {0, 1, 2}) want += double(x[size_t(t * 20 + col)]) * x[size_t(t * 20 + col)];
    want += double(x[size_t(col)]) * x[size_t(col)];
    EXPECT_DOUBLE_EQ(s->sum_x2[size_t(col)], want) << col;
  }
  EXPECT_EQ(c.find(w.slice_rows(3, 2)), s);  // a row band of the product's weight
  MatView odd = w;                           // the odd rows (the up half of a fused gate/up)
  odd.data = w.row(1);
  odd.rows = 4;
  odd.row_stride = 2 * w.row_stride;
  EXPECT_EQ(c.find(odd), s);
  MatView narrow = w;
  narrow.cols = 8;
  EXPECT_EQ(c.find(narrow), nullptr);  // other columns: another matrix
  std::vector<float> heap(128);
  MatView h = w;
  h.data = reinterpret_cast<const uint8_t*>(heap.data());
  EXPECT_EQ(c.find(h), nullptr);  // not from a file
  {
    auto again = TensorStore::from_files({path});  // a second mapping of the same file
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(c.find(view_of(again.value())), s);
  }
  fs::remove(path);
}

TEST(Imatrix, RoundTripsAndDamageIsOneErrorNamingTheFile) {
  Imatrix m;
  ImatrixEntry e;
  e.n = 2;
  e.cols = 3;
  e.mean_sq = {0.f, 1.f, 2.f, 3.f, 4.5f, 5.f};
  e.tokens = {0, 7};
  m.entries["layers.0.experts"] = e;
  m.meta["tokens"] = "7";
  const std::string path = tmp_path("a.imatrix");
  ASSERT_TRUE(save_imatrix(m, path));
  auto back = load_imatrix(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->entries.size(), 1u);
  const ImatrixEntry& b = back->entries.at("layers.0.experts");
  EXPECT_EQ(b.n, 2);
  EXPECT_EQ(b.cols, 3);
  EXPECT_EQ(b.mean_sq, e.mean_sq);
  EXPECT_EQ(b.tokens, e.tokens);
  EXPECT_EQ(back->meta.at("tokens"), "7");
  EXPECT_EQ(back->meta.at("format"), "inkling-imatrix");

  // Not an imatrix: a safetensors file of something else, a negative value, a missing count.
  const std::string other = tmp_path("b.imatrix");
  matrix_file(other, 2, 2);
  auto r = load_imatrix(other);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("not an importance matrix"));
  EXPECT_THAT(r.status().message(), HasSubstr(other));
  m.entries["layers.0.experts"].mean_sq[1] = -1.f;
  ASSERT_TRUE(save_imatrix(m, path));
  r = load_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("layers.0.experts.in_sq"));
  EXPECT_THAT(r.status().message(), HasSubstr("negative or not finite"));
  {
    auto w = SafetensorsWriter::create(path, {{"x.in_sq", DType::F32, {1, 2}}},
                                       {{"format", "inkling-imatrix"}});
    ASSERT_TRUE(w.ok());
    const float v[2] = {1, 2};
    ASSERT_TRUE(w.value()->write(0, 0, v, 8));
    ASSERT_TRUE(w.value()->finish());
  }
  r = load_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("x.tokens: missing"));
  r = load_imatrix(tmp_path("nothing.imatrix"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nothing.imatrix"));
  fs::remove(path);
  fs::remove(other);
}

}  // namespace
}  // namespace inkling
