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

TEST(ArgParserTest, EqualsFormAliasesAndEmptyValues) {
  std::string out;
  bool flag = false;
  OptionSpec out_row = TextOption("-o", &out);
  out_row.alias = "--output";
  const OptionSpec options[] = {out_row, FlagOption("--flag", &flag)};
  std::vector<std::string> pos;
  // --name=VALUE: the value is everything after the first '='.
  ASSERT_TRUE(ParseArgTable({"--output=a=b"}, options, &pos).ok());
  EXPECT_EQ(out, "a=b");
  ASSERT_TRUE(ParseArgTable({"-o", "c"}, options, &pos).ok());
  EXPECT_EQ(out, "c");
  // Given again: the later value wins.
  ASSERT_TRUE(ParseArgTable({"-o", "d", "--output", "e"}, options, &pos).ok());
  EXPECT_EQ(out, "e");
  ASSERT_TRUE(ParseArgTable({"--flag", "--flag"}, options, &pos).ok());
  EXPECT_TRUE(flag);
  EXPECT_TRUE(pos.empty());

  // Only long options take "=VALUE"; the name before '=' is the one named.
  EXPECT_EQ(ParseArgTable({"-o=x"}, options, &pos).message(),
            "unknown option '-o=x'");
  EXPECT_EQ(ParseArgTable({"--bogus=1"}, options, &pos).message(),
            "unknown option '--bogus'");
  EXPECT_EQ(ParseArgTable({"--flag=1"}, options, &pos).message(),
            "--flag takes no value");
  // An empty value is no value, in either form.
  EXPECT_EQ(ParseArgTable({"--output="}, options, &pos).message(),
            "--output needs a value");
  EXPECT_EQ(ParseArgTable({"-o", ""}, options, &pos).message(),
            "-o needs a value");
  // "" and "-" are positional; after "--" so is everything.
  ASSERT_TRUE(
      ParseArgTable({"", "-", "--", "--flag=1", "-o"}, options, &pos).ok());
  EXPECT_EQ(pos, (std::vector<std::string>{"", "-", "--flag=1", "-o"}));
}

TEST(ArgParserTest, TheFirstErrorStops) {
  int calls = 0;
  const OptionSpec options[] = {
      {"--n", true, [&calls](absl::string_view v) {
         ++calls;
         return v == "bad" ? absl::InvalidArgumentError("--n: bad")
                           : absl::OkStatus();
       }}};
  std::vector<std::string> pos;
  EXPECT_EQ(ParseArgTable({"--n", "1", "--n", "bad", "--n", "2"}, options, &pos)
                .message(),
            "--n: bad");
  EXPECT_EQ(calls, 2);
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
