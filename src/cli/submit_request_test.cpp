#include "cli/submit_request.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gf {
namespace {

SubmitOptions WithCommand() {
  SubmitOptions o;
  o.command = {"python", "train.py"};
  o.export_env = "NONE";
  return o;
}

TEST(SubmitRequestTest, BuildsBody) {
  SubmitOptions o = WithCommand();
  o.gpus = "2";
  o.priority = "high";
  o.time = "1h30m";
  o.checkpoint_signal = "sigusr1";
  o.env = {"A=1", "B=x=y"};
  auto body = BuildSubmitBody(o, "/home/u", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["gpus"], 2);
  EXPECT_EQ((*body)["priority"], "high");
  EXPECT_EQ((*body)["time_limit"], 5400);
  EXPECT_EQ((*body)["checkpoint_signal"], "USR1");
  EXPECT_EQ((*body)["workdir"], "/home/u");
  EXPECT_EQ((*body)["env"]["B"], "x=y");
  EXPECT_EQ((*body)["command"][1], "train.py");
}

TEST(SubmitRequestTest, ErrorsNameTheOption) {
  struct Case {
    void (*set)(SubmitOptions&);
    const char* prefix;
  };
  const Case cases[] = {
      {[](SubmitOptions& o) { o.gpus = "two"; }, "--gpus:"},
      {[](SubmitOptions& o) { o.gpus = "-1"; }, "--gpus:"},
      {[](SubmitOptions& o) { o.time = "soon"; }, "--time:"},
      {[](SubmitOptions& o) { o.priority = "urgent"; }, "--priority"},
      {[](SubmitOptions& o) { o.checkpoint_signal = "KILL"; }, "--checkpoint-signal:"},
      {[](SubmitOptions& o) { o.env = {"NOEQUALS"}; }, "--env:"},
      {[](SubmitOptions& o) { o.export_env = "SOME"; }, "--export:"},
      {[](SubmitOptions& o) { o.command.clear(); }, "command:"},
  };
  for (const auto& c : cases) {
    SubmitOptions o = WithCommand();
    c.set(o);
    auto body = BuildSubmitBody(o, "/tmp", {});
    ASSERT_FALSE(body.ok()) << c.prefix;
    EXPECT_EQ(body.error().message.rfind(c.prefix, 0), 0u) << body.error().message;
  }
}

TEST(SubmitRequestTest, ExportAllSkipsReservedAndInvalidNames) {
  SubmitOptions o = WithCommand();
  o.export_env = "ALL";
  auto body = BuildSubmitBody(o, "/tmp",
                              {{"PATH", "/bin"},
                               {"CUDA_VISIBLE_DEVICES", "0"},
                               {"GPUFLEET_JOB_ID", "3"},
                               {"BASH_FUNC_x%%", "() {}"}});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["env"].size(), 1u);
  EXPECT_EQ((*body)["env"]["PATH"], "/bin");
}

TEST(SubmitRequestTest, ReadsDirectivesUntilFirstCommand) {
  auto dir = std::filesystem::temp_directory_path() / ("gf-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto script = dir / "job.sh";
  std::ofstream(script) << "#!/bin/sh\n#GPUFLEET --gpus=2 --time=1h\n# a comment\n"
                           "#GPUFLEET --priority high\necho hi\n#GPUFLEET --gpus=8\n";
  auto tokens = ReadDirectives(script.string());
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(*tokens, (std::vector<std::string>{"--gpus=2", "--time=1h", "--priority", "high"}));
  // A script that is not executable runs through /bin/sh, by absolute path.
  SubmitOptions o;
  o.export_env = "NONE";
  o.command = {script.string(), "arg"};
  auto body = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["command"], nlohmann::json({"/bin/sh", script.string(), "arg"}));
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(ReadDirectives((dir / "missing.sh").string()).ok());
}

}  // namespace
}  // namespace gf
