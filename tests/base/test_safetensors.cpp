// safetensors reader: a valid multi-dtype file parses to the right shapes, sizes and data
// pointers; every malformed header is rejected with a message naming the file (and tensor);
// TensorStore::open_dir over single files, sharded indexes and broken indexes.
#include "base/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "../common/tmp_files.h"

namespace inkling {
namespace {

using ::testing::HasSubstr;
using testing::SafetensorsBuilder;
using testing::TempDir;
using testing::write_file;

std::string bytes_of(size_t n, uint8_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char(uint8_t(seed + 7 * i));
  return s;
}

// Writes `image` to a fresh file and opens it; returns the error message ("" when ok).
struct Opened {
  std::string path;
  Result<std::shared_ptr<SafetensorsFile>> result;
};
Opened open_image(const TempDir& dir, const std::string& image,
                  const std::string& name = "m.safetensors") {
  const std::string path = dir.file(name);
  write_file(path, image);
  return {path, SafetensorsFile::open(path)};
}

// Expects a failure whose message names the file and contains every one of `parts`.
void expect_error(const Opened& o, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(o.result.ok()) << "expected an error for " << o.path;
  const std::string& msg = o.result.status().message();
  EXPECT_THAT(msg, HasSubstr(o.path));
  for (const auto& p : parts) EXPECT_THAT(msg, HasSubstr(p));
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
}

// ---- valid files ---------------------------------------------------------------------------

TEST(Safetensors, ParsesEveryDtypeWithShapesBytesAndData) {
  TempDir dir;
  struct Want {
    const char* name;
    const char* dtype;
    DType t;
    std::vector<int64_t> shape;
    size_t elem;
  };
  const std::vector<Want> want = {
      {"a.f32", "F32", DType::F32, {2, 3}, 4},    {"b.bf16", "BF16", DType::BF16, {5}, 2},
      {"c.f16", "F16", DType::F16, {1, 3, 2}, 2}, {"d.e4m3", "F8_E4M3", DType::F8_E4M3, {7}, 1},
      {"e.u8", "U8", DType::U8, {3, 3}, 1},       {"f.i8", "I8", DType::I8, {4}, 1},
      {"g.u32", "U32", DType::U32, {2, 2}, 4},    {"h.i32", "I32", DType::I32, {3}, 4},
      {"i.i64", "I64", DType::I64, {2}, 8},       {"j.scalar", "F32", DType::F32, {}, 4},
      {"k.empty", "F32", DType::F32, {0, 4}, 4},
  };
  SafetensorsBuilder b;
  std::vector<std::string> payload;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : want[i].shape) n *= d;
    payload.push_back(bytes_of(size_t(n) * want[i].elem, uint8_t(i * 31)));
    b.add(want[i].name, want[i].dtype, want[i].shape, payload.back());
  }
  auto o = open_image(dir, b.build());
  ASSERT_TRUE(o.result.ok()) << o.result.status().message();
  const auto& f = *o.result.value();
  EXPECT_EQ(f.path(), o.path);
  ASSERT_EQ(f.tensors().size(), want.size());
  // The data section starts right after the header; tensors are packed in insertion order.
  const std::string image = testing::read_file(o.path);
  const size_t data_start = 8 + b.header().size();
  size_t offset = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorInfo* t = nullptr;
    for (const auto& x : f.tensors())
      if (x.name == want[i].name) t = &x;
    ASSERT_NE(t, nullptr) << want[i].name;
    EXPECT_EQ(t->dtype, want[i].t) << t->name;
    EXPECT_EQ(t->shape, want[i].shape) << t->name;
    EXPECT_EQ(t->nbytes, payload[i].size()) << t->name;
    EXPECT_EQ(size_t(t->numel()) * dtype_size(t->dtype), t->nbytes) << t->name;
    ASSERT_NE(t->file, nullptr);
    EXPECT_EQ(*t->file, o.path);
    if (t->nbytes) {
      ASSERT_NE(t->data, nullptr);
      EXPECT_EQ(std::memcmp(t->data, payload[i].data(), t->nbytes), 0) << t->name;
      EXPECT_EQ(std::memcmp(image.data() + data_start + offset, payload[i].data(), t->nbytes), 0);
    }
    offset += payload[i].size();
  }
  const TensorInfo* a = nullptr;
  for (const auto& x : f.tensors())
    if (x.name == "a.f32") a = &x;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape_str(), "[2, 3]");
  EXPECT_EQ(a->numel(), 6);
}

TEST(Safetensors, ReadsValuesThroughTheMapping) {
  TempDir dir;
  SafetensorsBuilder b;
  b.add_f32("x", {2, 2}, {1.5f, -2.f, 3.25f, 0.f});
  const uint16_t bf[3] = {0x3f80, 0xc040, 0x0000};  // 1, -3, 0
  b.add("y", "BF16", {3}, std::string(reinterpret_cast<const char*>(bf), 6));
  auto o = open_image(dir, b.build());
  ASSERT_TRUE(o.result.ok()) << o.result.status().message();
  const auto& ts = o.result.value()->tensors();
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& t : ts) {
    if (t.name == "x") {
      EXPECT_EQ(load_as_f32(t.dtype, t.data, 2), 3.25f);
      EXPECT_EQ(load_as_f32(t.dtype, t.data, 1), -2.f);
    } else {
      EXPECT_EQ(load_as_f32(t.dtype, t.data, 0), 1.f);
      EXPECT_EQ(load_as_f32(t.dtype, t.data, 1), -3.f);
    }
  }
}

TEST(Safetensors, Metadata) {
  TempDir dir;
  SafetensorsBuilder b;
  b.metadata("format", "pt").metadata("note", "tiny");
  b.add_f32("w", {1}, {2.f});
  auto o = open_image(dir, b.build());
  ASSERT_TRUE(o.result.ok()) << o.result.status().message();
  const auto& md = o.result.value()->metadata();
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md.at("format"), "pt");
  EXPECT_EQ(md.at("note"), "tiny");
  ASSERT_EQ(o.result.value()->tensors().size(), 1u);  // __metadata__ is not a tensor
  EXPECT_EQ(o.result.value()->tensors()[0].name, "w");
}

TEST(Safetensors, HeaderPaddedWithSpacesAndNoTensors) {
  TempDir dir;
  auto o = open_image(dir, testing::safetensors_image("{}        ", ""));
  ASSERT_TRUE(o.result.ok()) << o.result.status().message();
  EXPECT_TRUE(o.result.value()->tensors().empty());
}

TEST(Safetensors, ZeroSizedTensorsMayShareOffsets) {
  TempDir dir;
  const std::string h = R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("c":{"dtype":"I8","shape":[0,5],"data_offsets":[4,4]}})";
  auto o = open_image(dir, testing::safetensors_image(h, std::string(4, '\0')));
  ASSERT_TRUE(o.result.ok()) << o.result.status().message();
  EXPECT_EQ(o.result.value()->tensors().size(), 3u);
}

// ---- malformed files ------------------------------------------------------------------------

TEST(SafetensorsBad, EmptyFile) {
  TempDir dir;
  expect_error(open_image(dir, ""), {"truncated"});
}

TEST(SafetensorsBad, TruncatedBeforeHeaderLength) {
  TempDir dir;
  expect_error(open_image(dir, std::string(5, '\x01')), {"truncated"});
}

TEST(SafetensorsBad, HeaderLengthPastEndOfFile) {
  TempDir dir;
  std::string image = testing::safetensors_image("{}", "");
  const uint64_t big = 1000;
  std::memcpy(image.data(), &big, 8);
  expect_error(open_image(dir, image), {"header length 1000"});
}

TEST(SafetensorsBad, HeaderLengthHugeDoesNotOverflow) {
  TempDir dir;
  std::string image = testing::safetensors_image("{}", "");
  const uint64_t huge = std::numeric_limits<uint64_t>::max() - 3;
  std::memcpy(image.data(), &huge, 8);
  expect_error(open_image(dir, image), {"header length"});
}

TEST(SafetensorsBad, HeaderCutShort) {
  // A valid header whose last bytes were lost: the length points past EOF.
  TempDir dir;
  SafetensorsBuilder b;
  b.add_f32("w", {4}, {1, 2, 3, 4});
  const std::string full = b.build();
  expect_error(open_image(dir, full.substr(0, 8 + b.header().size() / 2)), {"header length"});
}

TEST(SafetensorsBad, HeaderNotJson) {
  TempDir dir;
  expect_error(open_image(dir, testing::safetensors_image("{\"w\": {nope", "")),
               {"not valid JSON"});
}

TEST(SafetensorsBad, HeaderNotAnObject) {
  TempDir dir;
  expect_error(open_image(dir, testing::safetensors_image("[1, 2, 3]", "")), {"not a JSON object"});
}

TEST(SafetensorsBad, MetadataNotAnObject) {
  TempDir dir;
  expect_error(open_image(dir, testing::safetensors_image(R"({"__metadata__": 3})", "")),
               {"__metadata__"});
}

TEST(SafetensorsBad, EntryNotAnObject) {
  TempDir dir;
  expect_error(open_image(dir, testing::safetensors_image(R"({"w": [1]})", "")), {"'w'"});
}

TEST(SafetensorsBad, UnknownDtype) {
  TempDir dir;
  const std::string h = R"({"layer.w":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,2]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, "ab")), {"'layer.w'", "Q4_K"});
}

TEST(SafetensorsBad, MissingDtype) {
  TempDir dir;
  const std::string h = R"({"layer.w":{"shape":[2],"data_offsets":[0,8]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(8, '\0'))),
               {"'layer.w'", "dtype"});
}

TEST(SafetensorsBad, NegativeShape) {
  TempDir dir;
  const std::string h = R"({"neg":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(8, '\0'))),
               {"'neg'", "shape"});
}

TEST(SafetensorsBad, NonIntegerShape) {
  TempDir dir;
  const std::string h = R"({"frac":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(4, '\0'))),
               {"'frac'", "shape"});
  const std::string h2 = R"({"str":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})";
  expect_error(
      open_image(dir, testing::safetensors_image(h2, std::string(8, '\0')), "s2.safetensors"),
      {"'str'", "shape"});
  const std::string h3 = R"({"noshape":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})";
  expect_error(
      open_image(dir, testing::safetensors_image(h3, std::string(16, '\0')), "s3.safetensors"),
      {"'noshape'", "shape"});
}

TEST(SafetensorsBad, ShapeProductOverflow) {
  TempDir dir;
  const std::string h =
      R"({"big":{"dtype":"I64","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, "")), {"'big'"});
}

TEST(SafetensorsBad, DataOffsetsOutOfRange) {
  TempDir dir;
  const std::string h = R"({"w":{"dtype":"F32","shape":[25],"data_offsets":[0,100]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(16, '\0'))),
               {"'w'", "past the end"});
}

TEST(SafetensorsBad, DataOffsetsMalformed) {
  TempDir dir;
  const char* headers[] = {
      R"({"w":{"dtype":"F32","shape":[1]}})",
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})",
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})",
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4.0]}})",
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":"0,4"}})",
  };
  int i = 0;
  for (const char* h : headers)
    expect_error(open_image(dir, testing::safetensors_image(h, std::string(4, '\0')),
                            "o" + std::to_string(i++) + ".safetensors"),
                 {"'w'", "data_offsets"});
}

TEST(SafetensorsBad, BeginAfterEnd) {
  TempDir dir;
  const std::string h = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[8,4]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(8, '\0'))),
               {"'w'", "begin > end"});
}

TEST(SafetensorsBad, OverlappingTensors) {
  TempDir dir;
  const std::string h = R"({"first":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("second":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(12, '\0'))),
               {"'first'", "'second'", "overlap"});
}

TEST(SafetensorsBad, IdenticalOffsetsOverlap) {
  TempDir dir;
  const std::string h = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("y":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(8, '\0'))), {"overlap"});
}

TEST(SafetensorsBad, ByteSizeMismatch) {
  TempDir dir;
  // F32 x [3] needs 12 bytes, the offsets give 8.
  const std::string h = R"({"mis":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  expect_error(open_image(dir, testing::safetensors_image(h, std::string(16, '\0'))),
               {"'mis'", "byte size 8 != 12"});
  // BF16 x [2, 2] needs 8 bytes, the offsets give 16.
  const std::string h2 = R"({"mis2":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,16]}})";
  expect_error(
      open_image(dir, testing::safetensors_image(h2, std::string(16, '\0')), "b.safetensors"),
      {"'mis2'", "16 != 8"});
}

TEST(SafetensorsBad, DirectoryInsteadOfFile) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("sub.safetensors"));
  auto r = SafetensorsFile::open(dir.file("sub.safetensors"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(dir.file("sub.safetensors")));
}

TEST(SafetensorsBad, MissingFile) {
  TempDir dir;
  auto r = SafetensorsFile::open(dir.file("nope.safetensors"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(dir.file("nope.safetensors")));
}

// ---- limits (SafetensorsLimits; parsed from memory) ------------------------------------------

// Parses an in-memory image named "mem.safetensors"; returns the error message ("" when ok).
std::string parse_error(const std::string& image, const SafetensorsLimits& limits = {}) {
  auto r = SafetensorsFile::parse(MappedFile::from_bytes("mem.safetensors", image), limits);
  return r.ok() ? "" : r.status().message();
}

TEST(SafetensorsLimits, ParsesFromMemory) {
  SafetensorsBuilder b;
  b.add_f32("w", {2}, {1, 2});
  auto r = SafetensorsFile::parse(MappedFile::from_bytes("mem.safetensors", b.build()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()->tensors().at(0).nbytes, 8u);
}

TEST(SafetensorsLimits, HeaderSizeCap) {
  const std::string h = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  SafetensorsLimits limits;
  limits.max_header_bytes = h.size() - 1;
  const std::string msg = parse_error(testing::safetensors_image(h, std::string(4, '\0')), limits);
  EXPECT_THAT(msg, HasSubstr("mem.safetensors: header length"));
  EXPECT_THAT(msg, HasSubstr("exceeds the limit of " + std::to_string(h.size() - 1)));
  limits.max_header_bytes = h.size();
  EXPECT_EQ(parse_error(testing::safetensors_image(h, std::string(4, '\0')), limits), "");
}

TEST(SafetensorsLimits, HeaderCapCheckedBeforeTheFileSize) {
  // A huge claimed length is refused by the cap without looking further.
  std::string image = testing::safetensors_image("{}", "");
  const uint64_t big = 200'000'000;
  std::memcpy(image.data(), &big, 8);
  EXPECT_THAT(parse_error(image), HasSubstr("header length 200000000 exceeds the limit"));
}

TEST(SafetensorsLimits, TensorCountCap) {
  const std::string h = R"({"__metadata__":{"a":"b"},)"
                        R"("x":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                        R"("y":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})";
  SafetensorsLimits limits;
  limits.max_tensors = 1;
  EXPECT_THAT(parse_error(testing::safetensors_image(h, ""), limits),
              HasSubstr("mem.safetensors: header lists 2 tensors (limit 1)"));
  limits.max_tensors = 2;  // __metadata__ is not a tensor
  EXPECT_EQ(parse_error(testing::safetensors_image(h, ""), limits), "");
}

TEST(SafetensorsLimits, RankCap) {
  const std::string h = R"({"r":{"dtype":"U8","shape":[1,1,1,1],"data_offsets":[0,1]}})";
  SafetensorsLimits limits;
  limits.max_rank = 3;
  EXPECT_THAT(parse_error(testing::safetensors_image(h, "x"), limits),
              HasSubstr("tensor 'r': shape has 4 dimensions (limit 3)"));
  EXPECT_EQ(parse_error(testing::safetensors_image(h, "x")), "");
}

TEST(SafetensorsLimits, ZeroSizedShapeWhoseOtherDimensionsOverflow) {
  // numel is 0, but any code multiplying the other dimensions would overflow int64.
  const std::string h =
      R"({"z":{"dtype":"F32","shape":[4294967296,0,4294967296],"data_offsets":[0,0]}})";
  EXPECT_THAT(parse_error(testing::safetensors_image(h, "")),
              HasSubstr("tensor 'z': shape too large: the product of its dimensions overflows"));
}

TEST(SafetensorsLimits, NumberBeyondDoubleIsAnError) {
  // nlohmann reports 1e400 as out_of_range, not parse_error; it must still be a Status.
  const std::string h = R"({"__metadata__":{"x":1e400}})";
  EXPECT_THAT(parse_error(testing::safetensors_image(h, "")),
              HasSubstr("mem.safetensors: header is not valid JSON"));
}

TEST(SafetensorsLimits, DeeplyNestedHeader) {
  const std::string h =
      "{\"__metadata__\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(parse_error(testing::safetensors_image(h, "")),
              HasSubstr("mem.safetensors: header: JSON nested deeper than 128 levels"));
}

// ---- TensorStore::open_dir ------------------------------------------------------------------

TEST(TensorStore, SingleFile) {
  TempDir dir;
  SafetensorsBuilder b;
  b.add_f32("a", {2}, {1, 2}).add_f32("b", {1, 1}, {3});
  b.write(dir.file("model.safetensors"));
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->all().size(), 2u);
  EXPECT_EQ(s->files().size(), 1u);
  ASSERT_NE(s->find("b"), nullptr);
  EXPECT_EQ(load_as_f32(DType::F32, s->find("b")->data, 0), 3.f);
  EXPECT_EQ(s->find("c"), nullptr);
}

TEST(TensorStore, GlobsEveryShardWithoutIndex) {
  TempDir dir;
  SafetensorsBuilder().add_f32("a", {1}, {1}).write(dir.file("x-00001.safetensors"));
  SafetensorsBuilder().add_f32("b", {1}, {2}).write(dir.file("x-00002.safetensors"));
  write_file(dir.file("README.md"), "not a tensor file");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->all().size(), 2u);
  EXPECT_EQ(s->files().size(), 2u);
}

void write_two_shards(const TempDir& dir) {
  SafetensorsBuilder()
      .add_f32("a", {2}, {1, 2})
      .add_f32("b", {1}, {3})
      .write(dir.file("model-00001-of-00002.safetensors"));
  SafetensorsBuilder()
      .add_f32("c", {3}, {4, 5, 6})
      .write(dir.file("model-00002-of-00002.safetensors"));
}

TEST(TensorStore, IndexWithTwoShards) {
  TempDir dir;
  write_two_shards(dir);
  write_file(dir.file("model.safetensors.index.json"),
             R"({"metadata":{"total_size":24},"weight_map":{)"
             R"("a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors",)"
             R"("c":"model-00002-of-00002.safetensors"}})");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->files().size(), 2u);
  ASSERT_EQ(s->all().size(), 3u);
  ASSERT_NE(s->find("a"), nullptr);
  ASSERT_NE(s->find("c"), nullptr);
  EXPECT_EQ(*s->find("a")->file, dir.file("model-00001-of-00002.safetensors"));
  EXPECT_EQ(*s->find("c")->file, dir.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(load_as_f32(DType::F32, s->find("c")->data, 2), 6.f);
}

TEST(TensorStore, IndexTakesPrecedenceOverStrayFiles) {
  TempDir dir;
  write_two_shards(dir);
  // A stray file the index does not name must not be read (it is even malformed).
  write_file(dir.file("stray.safetensors"), "garbage");
  write_file(dir.file("model.safetensors.index.json"),
             R"({"weight_map":{"c":"model-00002-of-00002.safetensors"}})");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->files().size(), 1u);
  EXPECT_NE(s->find("c"), nullptr);
}

TEST(TensorStore, IndexNamesMissingShard) {
  TempDir dir;
  write_two_shards(dir);
  write_file(
      dir.file("model.safetensors.index.json"),
      R"({"weight_map":{"a":"model-00001-of-00002.safetensors","z":"model-00003-of-00003.safetensors"}})");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("model-00003-of-00003.safetensors"));
}

TEST(TensorStore, IndexListsTensorNotInShard) {
  TempDir dir;
  write_two_shards(dir);
  write_file(
      dir.file("model.safetensors.index.json"),
      R"({"weight_map":{"a":"model-00001-of-00002.safetensors","ghost":"model-00002-of-00002.safetensors"}})");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("'ghost'"));
  EXPECT_THAT(s.status().message(), HasSubstr("model-00002-of-00002.safetensors"));
  EXPECT_THAT(s.status().message(), HasSubstr("model.safetensors.index.json"));
}

TEST(TensorStore, DuplicateTensorAcrossShards) {
  TempDir dir;
  SafetensorsBuilder().add_f32("dup", {1}, {1}).write(dir.file("s1.safetensors"));
  SafetensorsBuilder().add_f32("dup", {1}, {2}).write(dir.file("s2.safetensors"));
  write_file(dir.file("model.safetensors.index.json"),
             R"({"weight_map":{"dup":"s1.safetensors","other":"s2.safetensors"}})");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("'dup'"));
  EXPECT_THAT(s.status().message(), HasSubstr("s1.safetensors"));
  EXPECT_THAT(s.status().message(), HasSubstr("s2.safetensors"));
  // Same without an index.
  std::filesystem::remove(dir.file("model.safetensors.index.json"));
  auto g = TensorStore::open_dir(dir.path());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("'dup'"));
}

TEST(TensorStore, FolderWithoutSafetensors) {
  TempDir dir;
  write_file(dir.file("config.json"), "{}");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(dir.path()));
}

TEST(TensorStore, MissingFolder) {
  TempDir dir;
  auto s = TensorStore::open_dir(dir.file("does-not-exist"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("does-not-exist"));
}

TEST(TensorStore, IndexWithPathTraversal) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("model"));
  // The escaping target exists and is valid, so only the name check can stop it.
  SafetensorsBuilder().add_f32("a", {1}, {1}).write(dir.file("x.safetensors"));
  SafetensorsBuilder().add_f32("b", {1}, {1}).write(dir.file("model/ok.safetensors"));
  const char* bad[] = {"../x.safetensors", "/etc/x.safetensors", ".."};
  for (const char* shard : bad) {
    write_file(dir.file("model/model.safetensors.index.json"),
               std::string(R"({"weight_map":{"b":"ok.safetensors","a":")") + shard + "\"}}");
    auto s = TensorStore::open_dir(dir.file("model"));
    ASSERT_FALSE(s.ok()) << shard;
    EXPECT_THAT(s.status().message(), HasSubstr(shard));
    EXPECT_THAT(s.status().message(), HasSubstr("model.safetensors.index.json"));
  }
}

TEST(TensorStore, IndexMalformed) {
  TempDir dir;
  write_two_shards(dir);
  const char* bad[] = {"{not json", "[]", R"({"metadata":{}})", R"({"weight_map":[]})",
                       R"({"weight_map":{"a":5}})"};
  for (const char* text : bad) {
    write_file(dir.file("model.safetensors.index.json"), text);
    auto s = TensorStore::open_dir(dir.path());
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_THAT(s.status().message(), HasSubstr("model.safetensors.index.json")) << text;
  }
}

TEST(TensorStore, BadShardNamesTheShard) {
  TempDir dir;
  SafetensorsBuilder().add_f32("a", {1}, {1}).write(dir.file("s1.safetensors"));
  write_file(dir.file("s2.safetensors"), std::string(3, 'x'));
  write_file(dir.file("model.safetensors.index.json"),
             R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  auto s = TensorStore::open_dir(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(dir.file("s2.safetensors")));
  EXPECT_THAT(s.status().message(), HasSubstr("truncated"));
}

}  // namespace
}  // namespace inkling
