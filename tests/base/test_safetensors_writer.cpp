// SafetensorsWriter: files it writes read back through the validating reader with the same
// names, dtypes, shapes and bytes (written out of order, from several threads); the file only
// appears under its name after finish(); short or overlong writes and bad declarations are
// errors; an abandoned or destroyed writer leaves nothing behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "../common/tmp_files.h"
#include "base/safetensors.h"
#include "base/safetensors_writer.h"

namespace inkling {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<TensorDecl> decls() {
  return {{"a.weight", DType::U32, {3, 5}},
          {"a.scales", DType::BF16, {3, 1}},
          {"norm", DType::F32, {7}},
          {"empty", DType::F16, {0, 4}}};
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
  return v;
}

TEST(SafetensorsWriter, RoundTripsThroughTheReader) {
  TempDir tmp;
  const std::string path = tmp.file("out.safetensors");
  auto w = SafetensorsWriter::create(path, decls(), {{"format", "mlx"}});
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < decls().size(); ++i)
    data.push_back(pattern(size_t(decls()[i].nbytes()), uint8_t(i * 40)));
  // Tensor 0 row by row in reverse order from two threads; the others whole.
  std::thread t([&] {
    for (int r = 2; r >= 0; r -= 2)
      ASSERT_TRUE(w.value()->write(0, uint64_t(r) * 20, data[0].data() + r * 20, 20).ok());
  });
  ASSERT_TRUE(w.value()->write(0, 20, data[0].data() + 20, 20).ok());
  t.join();
  ASSERT_TRUE(w.value()->write(2, 0, data[2].data(), data[2].size()).ok());
  ASSERT_TRUE(w.value()->write(1, 0, data[1].data(), data[1].size()).ok());
  EXPECT_FALSE(fs::exists(path)) << "visible before finish()";
  ASSERT_TRUE(w.value()->finish().ok());
  ASSERT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(fs::file_size(path), w.value()->file_size());
  EXPECT_EQ(fs::file_size(path), safetensors_file_size(decls(), {{"format", "mlx"}}));

  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f.value()->metadata().at("format"), "mlx");
  ASSERT_EQ(f.value()->tensors().size(), 4u);
  const std::vector<TensorDecl> ds = decls();
  for (size_t i = 0; i < 4; ++i) {
    const TensorDecl& d = ds[i];
    auto it = std::find_if(f.value()->tensors().begin(), f.value()->tensors().end(),
                           [&](const TensorInfo& t) { return t.name == d.name; });
    ASSERT_NE(it, f.value()->tensors().end()) << d.name;
    const TensorInfo& ti = *it;
    EXPECT_EQ(ti.dtype, d.dtype);
    EXPECT_EQ(ti.shape, d.shape);
    ASSERT_EQ(ti.nbytes, data[i].size());
    if (ti.nbytes) {
      EXPECT_EQ(std::memcmp(ti.data, data[i].data(), ti.nbytes), 0) << d.name;
    }
  }
  // The header is padded so the data start at a multiple of 8 bytes.
  uint64_t hlen = 0;
  const std::string bytes = testing::read_file(path);
  std::memcpy(&hlen, bytes.data(), 8);
  EXPECT_EQ((8 + hlen) % 8, 0u);
}

TEST(SafetensorsWriter, RefusesIncompleteAndOverlongWrites) {
  TempDir tmp;
  const std::string path = tmp.file("out.safetensors");
  auto w = SafetensorsWriter::create(path, decls());
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> big(64);
  Status over = w.value()->write(2, 20, big.data(), 9);  // norm has 28 bytes
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("'norm'"), std::string::npos) << over.message();
  ASSERT_TRUE(w.value()->write(2, 0, big.data(), 28).ok());
  Status short_write = w.value()->finish();
  ASSERT_FALSE(short_write.ok());
  EXPECT_NE(short_write.message().find("'a.weight' received 0 of its 60 bytes"), std::string::npos)
      << short_write.message();
  w.value().reset();  // destroyed unfinished: nothing is left
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(SafetensorsWriter, RefusesBadDeclarations) {
  TempDir tmp;
  auto dup = SafetensorsWriter::create(tmp.file("x.safetensors"),
                                       {{"t", DType::F32, {1}}, {"t", DType::F32, {2}}});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("'t' declared twice"), std::string::npos);
  EXPECT_FALSE(SafetensorsWriter::create(tmp.file("x.safetensors"), {{"", DType::F32, {1}}}).ok());
  EXPECT_FALSE(
      SafetensorsWriter::create(tmp.file("x.safetensors"), {{"n", DType::F32, {-1}}}).ok());
  auto nodir =
      SafetensorsWriter::create(tmp.file("missing/x.safetensors"), {{"t", DType::F32, {1}}});
  ASSERT_FALSE(nodir.ok());
  EXPECT_NE(nodir.status().message().find("cannot create"), std::string::npos);
}

TEST(SafetensorsWriter, AbandonRemovesTheTemporaryFile) {
  TempDir tmp;
  const std::string path = tmp.file("out.safetensors");
  auto w = SafetensorsWriter::create(path, {{"t", DType::F32, {4}}});
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(fs::exists(path + ".tmp"));
  w.value()->abandon();
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace inkling
