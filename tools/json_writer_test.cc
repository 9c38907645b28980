#include "tools/json_writer.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace hurray::tools {
namespace {

std::string Quoted(absl::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

std::string DoubleText(double v) {
  std::string out;
  AppendJsonDouble(v, &out);
  return out;
}

TEST(JsonStringTest, PlainAsciiIsQuoted) {
  EXPECT_EQ(Quoted(""), R"("")");
  EXPECT_EQ(Quoted("row_major"), R"("row_major")");
  EXPECT_EQ(Quoted("a/b ~\x7F"), "\"a/b ~\x7F\"");  // '/' and DEL need none
}

TEST(JsonStringTest, QuoteAndBackslashAreEscaped) {
  EXPECT_EQ(Quoted(R"(magic is not "HRRY")"), R"("magic is not \"HRRY\"")");
  EXPECT_EQ(Quoted(R"(C:\dir\f)"), R"("C:\\dir\\f")");
}

TEST(JsonStringTest, ControlCharactersAreEscaped) {
  EXPECT_EQ(Quoted("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(Quoted(absl::string_view("\0", 1)), R"("\u0000")");
  EXPECT_EQ(Quoted("\x01\x1B\x1F"), R"("\u0001\u001b\u001f")");
  EXPECT_EQ(Quoted("a\x0B"
                   "b"),
            R"("a\u000bb")");
}

TEST(JsonStringTest, ValidUtf8PassesThrough) {
  // 2-, 3- and 4-byte sequences, and the extremes of the valid ranges.
  EXPECT_EQ(Quoted("é § €"), "\"é § €\"");
  EXPECT_EQ(Quoted("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");  // U+1F600
  EXPECT_EQ(Quoted("\xC2\x80"), "\"\xC2\x80\"");                  // U+0080
  EXPECT_EQ(Quoted("\xED\x9F\xBF"), "\"\xED\x9F\xBF\"");          // U+D7FF
  EXPECT_EQ(Quoted("\xEE\x80\x80"), "\"\xEE\x80\x80\"");          // U+E000
  EXPECT_EQ(Quoted("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF
}

TEST(JsonStringTest, InvalidUtf8IsReplaced) {
  EXPECT_EQ(Quoted("a\x80z"), R"("a\ufffdz")");        // lone continuation
  EXPECT_EQ(Quoted("\xC0\xAF"), R"("\ufffd\ufffd")");  // overlong '/'
  EXPECT_EQ(Quoted("\xE0\x80\xAF"), R"("\ufffd\ufffd\ufffd")");  // overlong
  EXPECT_EQ(Quoted("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");  // surrogate
  EXPECT_EQ(Quoted("\xF4\x90\x80\x80"),
            R"("\ufffd\ufffd\ufffd\ufffd")");  // above U+10FFFF
  EXPECT_EQ(Quoted("\xFF"), R"("\ufffd")");
  // A truncated sequence is one maximal subpart: one replacement.
  EXPECT_EQ(Quoted("\xE2\x82"), R"("\ufffd")");
  EXPECT_EQ(Quoted("\xE2\x82z"), R"("\ufffdz")");
  EXPECT_EQ(Quoted("\xF0\x9F\x98"
                   "\""),
            R"("\ufffd\"")");
}

TEST(JsonDoubleTest, FiniteValuesRoundTrip) {
  EXPECT_EQ(DoubleText(0.25), "0.25");
  EXPECT_EQ(DoubleText(4.0), "4");
  EXPECT_EQ(DoubleText(-2.5), "-2.5");
  EXPECT_EQ(DoubleText(0.1), "0.10000000000000001");
  EXPECT_EQ(DoubleText(static_cast<double>(0.05f)), "0.05000000074505806");
  EXPECT_EQ(DoubleText(1e300), "1.0000000000000001e+300");
  for (double v : {0.1, 1.0 / 3.0, 6.02214076e23, 5e-324,
                   std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::min(), -1.0e-7}) {
    const std::string text = DoubleText(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
}

TEST(JsonDoubleTest, NonFiniteValuesAreNull) {
  EXPECT_EQ(DoubleText(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(DoubleText(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(DoubleText(-std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonWriterTest, WritesNestedStructures) {
  std::string out;
  JsonWriter w(&out);
  EXPECT_FALSE(w.complete());
  w.BeginObject();
  w.Key("file").String("a\"b");
  w.Key("valid").Bool(true);
  w.Key("shape").BeginArray().Uint(3).Uint(4).EndArray();
  w.Key("empty").BeginArray().EndArray();
  w.Key("obj").BeginObject().EndObject();
  w.Key("buffers").BeginArray();
  w.BeginObject().Key("byte_size").Uint(48).EndObject();
  w.BeginObject().Key("byte_size").Uint(0).EndObject();
  w.EndArray();
  w.Key("q").Null();
  w.Key("f").Bool(false);
  w.Key("zp").Int(-3);
  w.Key("scale").Double(0.5);
  w.Key("nan").Double(std::nan(""));
  EXPECT_FALSE(w.complete());
  w.EndObject();
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(out,
            R"({"file":"a\"b","valid":true,"shape":[3,4],"empty":[],"obj":{},)"
            R"("buffers":[{"byte_size":48},{"byte_size":0}],"q":null,)"
            R"("f":false,"zp":-3,"scale":0.5,"nan":null})");
}

TEST(JsonWriterTest, IntegersAreExact) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray()
      .Uint(std::numeric_limits<uint64_t>::max())
      .Uint(0)
      .Int(std::numeric_limits<int64_t>::min())
      .Int(std::numeric_limits<int64_t>::max())
      .EndArray();
  EXPECT_EQ(out,
            "[18446744073709551615,0,-9223372036854775808,"
            "9223372036854775807]");
}

TEST(JsonWriterTest, KeysAreEscaped) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("a\nb").Uint(1).EndObject();
  EXPECT_EQ(out, R"({"a\nb":1})");
}

TEST(JsonWriterTest, AppendsToExistingText) {
  std::string out = "prefix ";
  JsonWriter w(&out);
  w.String("x");
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(out, R"(prefix "x")");
}

}  // namespace
}  // namespace hurray::tools
