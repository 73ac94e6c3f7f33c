#include "controller/job_arrays.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(JobArraysTest, ValidateArrayRequest) {
  EXPECT_TRUE(ValidateArrayRequest(ArrayRequest{.indices = {0, 1, 5}, .max_running = 2}).ok());
  EXPECT_TRUE(ValidateArrayRequest(ArrayRequest{.indices = {7}, .max_running = std::nullopt}).ok());
  auto error = [](const ArrayRequest& r) {
    Status s = ValidateArrayRequest(r);
    return s.ok() ? std::string() : s.error().message;
  };
  EXPECT_NE(
      error(ArrayRequest{.indices = {}, .max_running = std::nullopt}).find("array.indices: empty"),
      std::string::npos);
  EXPECT_NE(error(ArrayRequest{.indices = {1, 2, 1}, .max_running = std::nullopt})
                .find("1 is given twice"),
            std::string::npos);
  EXPECT_NE(error(ArrayRequest{.indices = {-1}, .max_running = std::nullopt}).find("out of range"),
            std::string::npos);
  EXPECT_NE(error(ArrayRequest{.indices = {0}, .max_running = 0}).find("array.max_running"),
            std::string::npos);
  ArrayRequest big;
  for (int i = 0; i <= kMaxArrayTasks; ++i) {
    big.indices.push_back(i);
  }
  EXPECT_NE(error(big).find("at most 10000"), std::string::npos);
  big.indices.pop_back();
  EXPECT_TRUE(ValidateArrayRequest(big).ok());
}

}  // namespace
}  // namespace gf
