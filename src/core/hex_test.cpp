#include "core/hex.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(HexTest, EncodesLowercaseAndDecodesEitherCase) {
  const std::string bytes("\x00\x7f\x80\xff" "A", 5);
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
