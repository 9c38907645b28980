// SafeFileName: every tensor name gives a file name that stays in its
// directory, distinct names distinct files (issue 13).
#include "stream/container/safe_file_name.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace hurray::stream::container {
namespace {

TEST(SafeFileName, Mapping) {
  EXPECT_EQ(SafeFileName("layers.0.w", 3), "layers.0.w");
  EXPECT_EQ(SafeFileName("a/b", 0), "a%2Fb");
  EXPECT_EQ(SafeFileName("..", 0), "%2E.");
  EXPECT_EQ(SafeFileName(".hidden", 0), "%2Ehidden");
  EXPECT_EQ(SafeFileName("../x", 0), "%2E.%2Fx");
  EXPECT_EQ(SafeFileName("100%", 0), "100%25");
  EXPECT_EQ(SafeFileName("", 7), "tensor_7");
  // Valid UTF-8 stays as it is (issue 13: it was percent-encoded).
  EXPECT_EQ(SafeFileName("\xC3\xA9", 0), "\xC3\xA9");
  EXPECT_EQ(SafeFileName("\xE5\xB1\x82.0", 0), "\xE5\xB1\x82.0");
  EXPECT_EQ(SafeFileName("stats+shard", 0), "stats+shard");
  EXPECT_EQ(SafeFileName("a b:c", 0), "a b:c");
  // Control characters, NUL, C1 controls, bytes that are not UTF-8, and the
  // cut marker '~' are escaped.
  EXPECT_EQ(SafeFileName(std::string("a\0b\x1b\n\x7F", 6), 0),
            "a%00b%1B%0A%7F");
  EXPECT_EQ(SafeFileName("\xC2\x85x", 0), "%C2%85x");
  EXPECT_EQ(SafeFileName("\xFF\xC3", 0), "%FF%C3");
  EXPECT_EQ(SafeFileName("\xED\xA0\x80", 0), "%ED%A0%80");  // a surrogate
  EXPECT_EQ(SafeFileName("x~1", 0), "x%7E1");
  EXPECT_EQ(SafeFileName(".", 0), "%2E");
  // Cut at a character boundary; distinct from a short name that looks
  // like a cut one.
  std::string wide;
  for (int i = 0; i < 100; ++i) wide += "\xE5\xB1\x82";
  const std::string cut = SafeFileName(wide, 5);
  EXPECT_LE(cut.size(), 200u);
  EXPECT_TRUE(absl::EndsWith(cut, "~5"));
  EXPECT_EQ((cut.size() - 2) % 3, 0u);
  EXPECT_NE(SafeFileName(cut, 9), cut);
  const std::string long_name = SafeFileName(std::string(300, '/'), 42);
  EXPECT_LE(long_name.size(), 200u);
  EXPECT_TRUE(absl::EndsWith(long_name, "~42"));
  EXPECT_EQ(long_name.find('/'), std::string::npos);
}

}  // namespace
}  // namespace hurray::stream::container
