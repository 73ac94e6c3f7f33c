#include "cli/top_keys.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

const std::vector<std::int64_t> kOrder = {12, 7, 13};  // as the frame lists them

TEST(TopKeysTest, QuitOnQOrCtrlCAndNothingAfterIt) {
  TopControls controls;
  EXPECT_TRUE(ApplyTopKeys("q", kOrder, controls).quit);
  EXPECT_TRUE(ApplyTopKeys("Q", kOrder, controls).quit);
  EXPECT_TRUE(ApplyTopKeys("\x03", kOrder, controls).quit);
  EXPECT_TRUE(ApplyTopKeys("qj", kOrder, controls).quit);
  EXPECT_EQ(controls.selected_job, std::nullopt) << "keys after q are not read";
  EXPECT_FALSE(ApplyTopKeys("x", kOrder, controls).quit);
}

TEST(TopKeysTest, JAndKAndTheArrowsMoveTheSelectionWithinTheList) {
  TopControls controls;
  ApplyTopKeys("j", kOrder, controls);
  EXPECT_EQ(controls.selected_job, 12) << "the first job";
  ApplyTopKeys("jj", kOrder, controls);
  EXPECT_EQ(controls.selected_job, 13);
  ApplyTopKeys("j", kOrder, controls);
  EXPECT_EQ(controls.selected_job, 13) << "stays on the last";
  ApplyTopKeys("\x1b[A", kOrder, controls);  // Up
  EXPECT_EQ(controls.selected_job, 7);
  ApplyTopKeys("\x1bOB", kOrder, controls);  // Down, application cursor mode
  EXPECT_EQ(controls.selected_job, 13);
  ApplyTopKeys("kkkk", kOrder, controls);
  EXPECT_EQ(controls.selected_job, 12);
  // Other sequences are read whole: F5 (ESC [ 1 5 ~) is neither a move nor a 'q'.
  EXPECT_FALSE(ApplyTopKeys("\x1b[15~", kOrder, controls).quit);
  EXPECT_EQ(controls.selected_job, 12);
  // The selected job left the list: the next move starts again from an end.
  controls.selected_job = 99;
  ApplyTopKeys("k", kOrder, controls);
  EXPECT_EQ(controls.selected_job, 13);
  ApplyTopKeys("j", {}, controls);
  EXPECT_EQ(controls.selected_job, std::nullopt);
}

TEST(TopKeysTest, CancelAsksFirstAndOnlyYConfirms) {
  TopControls controls;
  ApplyTopKeys("c", kOrder, controls);
  EXPECT_EQ(controls.confirm_cancel, std::nullopt);
  EXPECT_NE(controls.message.find("no job selected"), std::string::npos) << controls.message;

  ApplyTopKeys("jjc", kOrder, controls);
  EXPECT_EQ(controls.confirm_cancel, 7);
  EXPECT_TRUE(controls.message.empty());
  const TopKeyOutcome no = ApplyTopKeys("n", kOrder, controls);
  EXPECT_EQ(no, TopKeyOutcome{});
  EXPECT_EQ(controls.confirm_cancel, std::nullopt);
  EXPECT_EQ(controls.message, "job 7 not cancelled");

  // 'q' answers the question (no) rather than quitting; Ctrl-C still quits.
  ApplyTopKeys("c", kOrder, controls);
  EXPECT_FALSE(ApplyTopKeys("q", kOrder, controls).quit);
  ApplyTopKeys("c", kOrder, controls);
  EXPECT_TRUE(ApplyTopKeys("\x03", kOrder, controls).quit);

  ApplyTopKeys("c", kOrder, controls);
  EXPECT_EQ(ApplyTopKeys("y", kOrder, controls), (TopKeyOutcome{.quit = false, .cancel = 7}));
  EXPECT_EQ(controls.confirm_cancel, std::nullopt);
}

TEST(TopKeysTest, SCyclesTheProcessSortAndAnyKeyClearsTheMessage) {
  TopControls controls;
  controls.message = "job 3 cancelled";
  ApplyTopKeys("s", kOrder, controls);
  EXPECT_EQ(controls.sort, TopSort::kCpu);
  EXPECT_TRUE(controls.message.empty());
  ApplyTopKeys("sss", kOrder, controls);
  EXPECT_EQ(controls.sort, TopSort::kGpuMemory);
}

}  // namespace
}  // namespace gf
