#include "core/printable_text.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(PrintableTextTest, KeepsPrintableAsciiAndUtf8) {
  EXPECT_EQ(EscapeControl("train.py --lr 3e-4"), "train.py --lr 3e-4");
  EXPECT_EQ(EscapeControl("jürgen 训练 🚀"), "jürgen 训练 🚀");
  EXPECT_EQ(EscapeControl(R"(C:\path\x1b)"), R"(C:\path\x1b)");  // a backslash stays
  EXPECT_EQ(FindControl("jürgen 训练 🚀"), std::nullopt);
}

TEST(PrintableTextTest, EscapesC0ControlsAndDel) {
  // An OSC that would set the terminal's title, a colour, BEL, CR, LF, NUL, DEL.
  EXPECT_EQ(EscapeControl("\x1b]0;pwned\x07"), R"(\x1b]0;pwned\x07)");
  EXPECT_EQ(EscapeControl("\x1b[31mred"), R"(\x1b[31mred)");
  EXPECT_EQ(EscapeControl("a\r\nBcc: x"), R"(a\x0d\x0aBcc: x)");
  EXPECT_EQ(EscapeControl(std::string("a\0b", 3)), R"(a\x00b)");
  EXPECT_EQ(EscapeControl("\x7f\t"), R"(\x7f\x09)");
  EXPECT_EQ(FindControl("job\x1b[2J"), 3U);
}

TEST(PrintableTextTest, EscapesC1ControlsAndInvalidUtf8) {
  // U+009B (CSI) in UTF-8, and the single byte 0x9B an 8-bit terminal reads as CSI.
  EXPECT_EQ(EscapeControl("a\xc2\x9b"
                          "2J"),
            R"(a\xc2\x9b2J)");
  EXPECT_EQ(EscapeControl("a\x9b"
                          "2J"),
            R"(a\x9b2J)");
  EXPECT_EQ(EscapeControl("\xc2\xa0"), "\xc2\xa0");                     // U+00A0 is printable
  EXPECT_EQ(EscapeControl("\xc0\xaf"), R"(\xc0\xaf)");                  // overlong '/'
  EXPECT_EQ(EscapeControl("\xed\xa0\x80"), R"(\xed\xa0\x80)");          // a surrogate
  EXPECT_EQ(EscapeControl("\xf4\x90\x80\x80"), R"(\xf4\x90\x80\x80)");  // beyond U+10FFFF
  EXPECT_EQ(EscapeControl("ok\xe8\xae"), R"(ok\xe8\xae)");              // cut short
  EXPECT_EQ(FindControl("ok\xe8\xae"), 2U);
  EXPECT_EQ(FindControl("\xc2\x85"), 0U);  // NEL
}

// Issue #20: a right-to-left override makes "evil<RLO>gpj.sh" show as "evilhs.jpg"; every
// Bidi_Control character is escaped, neighbours in the same blocks are not.
TEST(PrintableTextTest, EscapesBidirectionalFormattingCharacters) {
  EXPECT_EQ(EscapeControl("evil\xe2\x80\xaegpj.sh"), R"(evil\xe2\x80\xaegpj.sh)");  // U+202E
  EXPECT_EQ(EscapeControl("\xe2\x80\xaa"), R"(\xe2\x80\xaa)");                      // U+202A
  EXPECT_EQ(EscapeControl("\xe2\x81\xa6x\xe2\x81\xa9"), R"(\xe2\x81\xa6x\xe2\x81\xa9)");
  EXPECT_EQ(EscapeControl("\xe2\x80\x8f"), R"(\xe2\x80\x8f)");  // U+200F RIGHT-TO-LEFT MARK
  EXPECT_EQ(EscapeControl("\xd8\x9c"), R"(\xd8\x9c)");          // U+061C ARABIC LETTER MARK
  EXPECT_EQ(FindControl("ab\xe2\x80\xae"), 2U);
  EXPECT_EQ(EscapeControl("\xe2\x80\x94"), "\xe2\x80\x94");  // U+2014 EM DASH stays
  EXPECT_EQ(EscapeControl("\xe2\x80\xaf"), "\xe2\x80\xaf");  // U+202F NARROW NO-BREAK SPACE
  EXPECT_EQ(EscapeControl("\xe2\x81\xa5"), "\xe2\x81\xa5");  // U+2065 (unassigned) stays
  EXPECT_EQ(EscapeControl("\xd8\x9b"), "\xd8\x9b");          // U+061B ARABIC SEMICOLON
}

TEST(PrintableTextTest, EscapingTwiceChangesNothing) {
  const std::string once = EscapeControl("x\x1b\xc2\x9b\xff\n训");
  EXPECT_EQ(EscapeControl(once), once);
  EXPECT_EQ(FindControl(once), std::nullopt);
}

TEST(PrintableTextTest, TruncatesAtCharacterBoundaries) {
  EXPECT_EQ(TruncateUtf8("abc", 5), "abc");
  EXPECT_EQ(TruncateUtf8("abcdef", 3), "abc");
  EXPECT_EQ(TruncateUtf8("a训练", 2), "a");  // not half of 训
  EXPECT_EQ(TruncateUtf8("a训练", 4), "a训");
}

}  // namespace
}  // namespace gf
