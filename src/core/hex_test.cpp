#include "core/hex.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(HexTest, EncodesLowercaseAndDecodesEitherCase) {
  const std::string bytes(
      "\x00\x7f\x80\xff"
      "A",
      5);
  EXPECT_EQ(HexEncode(bytes), "007f80ff41");
  EXPECT_EQ(HexDecode("007F80FF41"), bytes);
  EXPECT_EQ(HexDecode(HexEncode(bytes)), bytes);
  EXPECT_EQ(HexEncode(""), "");
  EXPECT_EQ(HexDecode(""), std::string());
}

TEST(HexTest, RefusesOddLengthAndNonDigits) {
  EXPECT_FALSE(HexDecode("abc").has_value());
  EXPECT_FALSE(HexDecode("zz").has_value());
  EXPECT_FALSE(HexDecode("0g").has_value());
  EXPECT_EQ(HexDigitValue('f'), 15);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue('/'), -1);
}

}  // namespace
}  // namespace gf

namespace gf {
namespace {

TEST(PercentTest, EncodesAllButUnreservedAndDecodesBack) {
  EXPECT_EQ(PercentEncode("a-Z_0.9~"), "a-Z_0.9~");
  EXPECT_EQ(PercentEncode("ml team&all=1"), "ml%20team%26all%3D1");
  EXPECT_EQ(PercentEncode("é"), "%C3%A9");
  for (const std::string text : {"", "x y", "a&b=c", "%41", "é+ü", "100%"}) {
    EXPECT_EQ(PercentDecode(PercentEncode(text)), text) << text;
  }
  EXPECT_EQ(PercentDecode("a+b%2Bc"), "a b+c");
  EXPECT_EQ(PercentDecode("bad%4"), "bad%4");  // a malformed escape stays as it is
  EXPECT_EQ(PercentDecode("bad%zz"), "bad%zz");
}

}  // namespace
}  // namespace gf
