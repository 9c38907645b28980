#include "tools/display_text.h"

#include <string>

#include "gtest/gtest.h"

namespace hurray::tools {
namespace {

TEST(TerminalSafe, KeepsPrintableTextAndUtf8) {
  EXPECT_EQ(TerminalSafe("layers.0.q_proj"), "layers.0.q_proj");
  EXPECT_EQ(TerminalSafe("\xE5\xB1\x82.0 stats+shard"),
            "\xE5\xB1\x82.0 stats+shard");
}

TEST(TerminalSafe, EscapesControlsAndBackslash) {
  EXPECT_EQ(TerminalSafe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(TerminalSafe("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(TerminalSafe(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(TerminalSafe("\x7f\x07"), "\\x7f\\x07");
  EXPECT_EQ(TerminalSafe("a\\x1b"), "a\\\\x1b");  // unambiguous
}

TEST(TerminalSafe, EscapesC1BidiSeparatorsAndBadBytes) {
  EXPECT_EQ(TerminalSafe("\xC2\x9B"
                         "2J"),
            "\\u009b2J");  // CSI
  EXPECT_EQ(TerminalSafe("abc\xE2\x80\xAEgpj.exe"), "abc\\u202egpj.exe");
  EXPECT_EQ(TerminalSafe("\xE2\x80\xA8"), "\\u2028");
  EXPECT_EQ(TerminalSafe("\xFF\xC3"), "\\xff\\xc3");
  EXPECT_EQ(TerminalSafe("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(TerminalSafe("\xC0\xAF"), "\\xc0\\xaf");           // overlong
}

TEST(TerminalSafe, CapsColumnsNeverInsideAnEscape) {
  EXPECT_EQ(TerminalSafe("abcdefgh", 8), "abcdefgh");
  EXPECT_EQ(TerminalSafe("abcdefghi", 8), "abcde...");
  EXPECT_EQ(TerminalSafe("abcd\x1b", 8), "abcd\\x1b");
  EXPECT_EQ(TerminalSafe("abcd\x1b", 7), "abcd...");
  EXPECT_EQ(TerminalSafe("\xE5\xB1\x82\xE5\xB1\x82\xE5\xB1\x82xx", 4),
            "\xE5\xB1\x82...");
  EXPECT_EQ(DisplayWidth(TerminalSafe(std::string(1000, 'x'), 48)), 48u);
}

TEST(PadRight, CountsCharactersNotBytes) {
  EXPECT_EQ(PadRight("\xE5\xB1\x82", 3), "\xE5\xB1\x82  ");
  EXPECT_EQ(PadRight("abcd", 2), "abcd");
}

}  // namespace
}  // namespace hurray::tools
