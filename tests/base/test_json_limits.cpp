// check_json_depth: depth counted outside strings only, escapes honoured, the message names the
// source, the limit and the byte offset; text at exactly the limit passes.
#include "base/json_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace inkling {
namespace {

using ::testing::HasSubstr;

TEST(JsonDepth, AtTheLimitPasses) {
  EXPECT_TRUE(check_json_depth("[[[]]]", "x", 3).ok());
  EXPECT_TRUE(check_json_depth(R"({"a":{"b":[1]}})", "x", 3).ok());
  EXPECT_TRUE(check_json_depth("1", "x", 0).ok());
}

TEST(JsonDepth, OneDeeperFailsNamingSourceLimitAndOffset) {
  const Status s = check_json_depth(R"({"a":[{"b":1}]})", "request body", 2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "request body: JSON nested deeper than 2 levels (at byte 6)");
}

TEST(JsonDepth, BracketsInsideStringsDoNotCount) {
  EXPECT_TRUE(check_json_depth(R"(["[[[[", "{{{{\"[[", "\\"])", "x", 1).ok());
  EXPECT_FALSE(check_json_depth(R"(["\\", [1]])", "x", 1).ok());  // the string ended at \\"
}

TEST(JsonDepth, HundredThousandDeepIsRefusedWithoutRecursing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const Status s = check_json_depth(deep, "body");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("deeper than 128 levels (at byte 128)"));
}

TEST(JsonDepth, SiblingsDoNotAccumulate) {
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += "[[1]],";
  wide += "0]";
  EXPECT_TRUE(check_json_depth(wide, "x", 3).ok());
}

}  // namespace
}  // namespace inkling
