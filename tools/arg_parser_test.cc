#include "tools/arg_parser.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::tools {
namespace {

TEST(ArgParserTest, RowsSetWhatTheyName) {
  std::string out;
  bool flag = false;
  const OptionSpec options[] = {
      {"--out", true,
       [&out](absl::string_view v) {
         out = std::string(v);
         return absl::OkStatus();
       }},
      {"--flag", false,
       [&flag](absl::string_view) {
         flag = true;
         return absl::OkStatus();
       }},
  };
  std::vector<std::string> pos;
  const std::vector<std::string> args = {"a",      "--out", "-x",   "-",
                                         "--flag", "--",    "--out"};
  ASSERT_TRUE(ParseArgTable(args, options, &pos).ok());
  EXPECT_EQ(out, "-x");
  EXPECT_TRUE(flag);
  EXPECT_EQ(pos, (std::vector<std::string>{"a", "-", "--out"}));

  pos.clear();
  absl::Status s = ParseArgTable({"--nope"}, options, &pos);
  EXPECT_EQ(s.message(), "unknown option '--nope'");
  s = ParseArgTable({"a", "--out"}, options, &pos);
  EXPECT_EQ(s.message(), "--out needs a value");
}

TEST(ArgParserTest, ValueParsers) {
  uint64_t n = 0;
  EXPECT_TRUE(ParseUint("5", 1, 9, "bad", &n).ok());
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(ParseUint("0", 1, 9, "bad", &n).message(), "bad");
  EXPECT_EQ(ParseUint("10", 1, 9, "bad", &n).message(), "bad");
  EXPECT_FALSE(ParseUint("x", 1, 9, "bad", &n).ok());
  double d = 0;
  EXPECT_TRUE(ParseSeconds("--t", "2.5", &d).ok());
  EXPECT_EQ(d, 2.5);
  EXPECT_EQ(ParseSeconds("--t", "-1", &d).message(),
            "--t needs a number of seconds");
  EXPECT_FALSE(ParseSeconds("--t", "nan", &d).ok());
}

}  // namespace
}  // namespace hurray::tools
