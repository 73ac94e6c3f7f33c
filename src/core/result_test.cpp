#include "core/result.h"

#include <memory>

#include <gtest/gtest.h>

namespace gf {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) {
    return InvalidArgument("x must be even");
  }
  return x / 2;
}

Result<int> Quarter(int x) {
  GF_ASSIGN_OR_RETURN(int h, Half(x));
  GF_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  GF_TRY(Half(x));
  return OkStatus();
}

TEST(ResultTest, ValueAndErrorPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().ToString(), "invalid argument: x must be even");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(3).ok());
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> r = NotFound("nope");
  EXPECT_DEATH((void)r.value(), "GF_CHECK failed");
}

}  // namespace
}  // namespace gf
