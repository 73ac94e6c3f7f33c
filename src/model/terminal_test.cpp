#include "model/terminal.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(TerminalSizeTest, ParsesRowsByColumnsAndWritesItBack) {
  Result<TerminalSize> size = ParseTerminalSize("50x200", "GPUFLEET_PTY");
  ASSERT_TRUE(size.ok()) << size.error().ToString();
  EXPECT_EQ(size->rows, 50);
  EXPECT_EQ(size->cols, 200);
  EXPECT_EQ(FormatTerminalSize(*size), "50x200");
}

TEST(TerminalSizeTest, RefusesOtherFormsNamingTheFieldAndTheForm) {
  for (const char* bad : {"",
                          "80",
                          "x",
                          "24x",
                          "x80",
                          "24x80x1",
                          "-1x80",
                          "0x80",
                          "24x0",
                          "24 x80",
                          "24x80 ",
                          "10001x80"}) {
    Result<TerminalSize> size = ParseTerminalSize(bad, "GPUFLEET_PTY");
    ASSERT_FALSE(size.ok()) << bad;
    EXPECT_EQ(size.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(size.error().message.find("GPUFLEET_PTY"), std::string::npos) << size.error().message;
  }
}

TEST(TerminalSizeTest, SideBounds) {
  EXPECT_TRUE(ValidateTerminalSide(1, "rows").ok());
  EXPECT_TRUE(ValidateTerminalSide(kMaxTerminalSide, "rows").ok());
  EXPECT_FALSE(ValidateTerminalSide(0, "rows").ok());
  EXPECT_FALSE(ValidateTerminalSide(70000, "cols").ok());
}

}  // namespace
}  // namespace gf
