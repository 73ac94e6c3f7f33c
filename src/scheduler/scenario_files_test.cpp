// Runs every tests/scenarios/scheduler/*.scn file as its own test case (label scenario).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "scheduler/scenario.h"

namespace gf {
namespace {

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(GF_SCHEDULER_SCENARIO_DIR, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".scn") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// "priority_beats_submit" for ".../priority-beats-submit.scn": gtest names are [A-Za-z0-9_].
std::string CaseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  std::replace_if(
      name.begin(),
      name.end(),
      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) == 0; },
      '_');
  return name;
}

class SchedulerScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedulerScenarioTest, Passes) {
  std::ifstream in(GetParam());
  ASSERT_TRUE(in) << "cannot read " << GetParam();
  std::stringstream text;
  text << in.rdbuf();
  const Result<Scenario> scenario = ParseScenario(text.str());
  ASSERT_TRUE(scenario.ok()) << GetParam() << ": " << scenario.error().message;
  const Result<std::vector<std::string>> failures = RunScenario(*scenario);
  ASSERT_TRUE(failures.ok()) << GetParam() << ": " << failures.error().message;
  for (const std::string& failure : *failures) {
    ADD_FAILURE() << GetParam() << ":" << failure.substr(5);  // "<file>:<line>: ..."
  }
}

INSTANTIATE_TEST_SUITE_P(Files,
                         SchedulerScenarioTest,
                         ::testing::ValuesIn(ScenarioFiles()),
                         CaseName);

TEST(SchedulerScenarioFilesTest, FolderHasScenarios) {
  EXPECT_FALSE(ScenarioFiles().empty()) << "no .scn files in " << GF_SCHEDULER_SCENARIO_DIR;
}

}  // namespace
}  // namespace gf
