#include "cli/submit_request.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/sbatch_script.h"

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
  EXPECT_FALSE(body->contains("requeue"));  // not given: the server's default
}

TEST(SubmitRequestTest, RequeueIsSentOnlyWhenGiven) {
  for (const bool requeue : {false, true}) {
    SubmitOptions o = WithCommand();
    o.requeue = requeue;
    auto body = BuildSubmitBody(o, "/tmp", {});
    ASSERT_TRUE(body.ok()) << body.error().message;
    EXPECT_EQ((*body)["requeue"], requeue);
  }
}

TEST(SubmitRequestTest, NodesAreSentOnlyWhenGivenAndMustBeACount) {
  SubmitOptions o = WithCommand();
  auto plain = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->contains("nodes"));
  o.nodes = "4";
  auto body = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["nodes"], 4);
  for (const char* wrong : {"0", "-1", "two", "2x"}) {
    o.nodes = wrong;
    auto bad = BuildSubmitBody(o, "/tmp", {});
    ASSERT_FALSE(bad.ok()) << wrong;
    EXPECT_EQ(
        bad.error().message.rfind("--nodes: '" + std::string(wrong) + "' is not a node count", 0),
        0U);
  }
}

TEST(SubmitRequestTest, IdleReaperFlagsAreSentOnlyWhenGiven) {
  SubmitOptions o = WithCommand();
  auto plain = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->contains("interactive"));
  EXPECT_FALSE(plain->contains("idle_reap"));
  o.interactive = true;
  o.reap = false;
  auto body = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["interactive"], true);
  EXPECT_EQ((*body)["idle_reap"], false);
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
      {[](SubmitOptions& o) { o.priority = "Urgent!"; }, "--priority: 'Urgent!' is not a class"},
      {[](SubmitOptions& o) { o.checkpoint_signal = "KILL"; }, "--checkpoint-signal:"},
      {[](SubmitOptions& o) { o.env = {"NOEQUALS"}; }, "--env:"},
      {[](SubmitOptions& o) { o.export_env = "ALL,A-B"; }, "--export:"},
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
  auto body = BuildSubmitBody(o,
                              "/tmp",
                              {{"PATH", "/bin"},
                               {"CUDA_VISIBLE_DEVICES", "0"},
                               {"GPUFLEET_JOB_ID", "3"},
                               {"GPUFLEET_SOCKET", "/tmp/gf.sock"},
                               {"BASH_FUNC_x%%", "() {}"}});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["env"].size(), 2u);
  EXPECT_EQ((*body)["env"]["PATH"], "/bin");
  // The job reaches the daemon its submitter used (gpufleet checkpoint inside the job).
  EXPECT_EQ((*body)["env"]["GPUFLEET_SOCKET"], "/tmp/gf.sock");
}

TEST(SubmitRequestTest, ReadsDirectivesUntilFirstCommand) {
  auto dir = std::filesystem::temp_directory_path() / ("gf-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto script = dir / "job.sh";
  std::ofstream(script) << "#!/bin/sh\n#GPUFLEET --gpus=2 --time=1h\n# a comment\n"
                           "#GPUFLEET --priority high\necho hi\n#GPUFLEET --gpus=8\n";
  auto directives = ReadScriptDirectives(script.string());
  ASSERT_TRUE(directives.ok());
  EXPECT_EQ(directives->gpufleet,
            (std::vector<std::string>{"--gpus=2", "--time=1h", "--priority", "high"}));
  // A script that is not executable runs through /bin/sh, by absolute path.
  SubmitOptions o;
  o.export_env = "NONE";
  o.command = {script.string(), "arg"};
  auto body = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["command"], nlohmann::json({"/bin/sh", script.string(), "arg"}));
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(ReadScriptDirectives((dir / "missing.sh").string()).ok());
}

// `gpufleet submit eval.sh --fast` (the README's example): a script named without a '/' is
// found in the submitter's working directory, not in gpufleet's own, and runs by absolute path;
// after '--' the same name stays a command for PATH.
TEST(SubmitRequestTest, ScriptInTheWorkingDirectoryIsFoundByItsBareName) {
  auto dir = std::filesystem::temp_directory_path() / ("gf-cwd-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "eval.sh") << "#!/bin/sh\n#GPUFLEET --gpus=2\necho hi\n";
  SubmitOptions o;
  o.export_env = "NONE";
  o.command = {"eval.sh", "--fast"};
  EXPECT_EQ(ScriptPath(o, dir.string()), (dir / "eval.sh").string());
  auto body = BuildSubmitBody(o, dir.string(), {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["command"], nlohmann::json({"/bin/sh", (dir / "eval.sh").string(), "--fast"}));
  o.command_after_dashes = true;
  EXPECT_EQ(ScriptPath(o, dir.string()), std::nullopt);
  o.command = {"./eval.sh"};  // a path is a script in either form
  EXPECT_EQ(ScriptPath(o, dir.string()), (dir / "./eval.sh").string());
  o.command = {"missing.sh"};
  o.command_after_dashes = false;
  EXPECT_EQ(ScriptPath(o, dir.string()), std::nullopt);
  std::filesystem::remove_all(dir);
}

TEST(SubmitRequestTest, ParsesAfter) {
  auto after = ParseAfter({"12", "13:ok,14:any"});
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(*after,
            (std::vector<Dependency>{{.job = JobId(12), .kind = DependencyKind::kAny},
                                     {.job = JobId(13), .kind = DependencyKind::kOk},
                                     {.job = JobId(14), .kind = DependencyKind::kAny}}));
  for (const char* bad : {"x", "12:okay", "0", "-3", "12,", ":ok", "12:ok:ok"}) {
    auto r = ParseAfter({bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("--after: '", 0), 0u) << r.error().message;
  }
}

TEST(SubmitRequestTest, ParsesArraySpecs) {
  auto indices = [](const std::string& text) {
    auto r = ParseArraySpec(text);
    EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->indices : std::vector<int>{};
  };
  EXPECT_EQ(indices("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(indices("1,3,5-7"), (std::vector<int>{1, 3, 5, 6, 7}));
  EXPECT_EQ(indices("0-15:4"), (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(indices("7,1-2,2"), (std::vector<int>{1, 2, 7}));  // sorted, each once
  EXPECT_EQ(indices("5"), (std::vector<int>{5}));
  auto limited = ParseArraySpec("0-99%4");
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->indices.size(), 100u);
  EXPECT_EQ(limited->max_running, 4);
  EXPECT_FALSE(ParseArraySpec("0-9")->max_running);
  EXPECT_EQ(ParseArraySpec("0-9999")->indices.size(), 10000u);
}

TEST(SubmitRequestTest, ArraySpecErrorsNameTheFlag) {
  for (const char* bad : {"",
                          "a-b",
                          "5-2",
                          "0-9%0",
                          "0-9%",
                          "0-9%x",
                          "1:2",
                          "0-9:0",
                          "-1",
                          "0-10000",
                          "0-2000000000",
                          "1,,2"}) {
    auto r = ParseArraySpec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("--array: '", 0), 0u) << r.error().message;
  }
  EXPECT_NE(ParseArraySpec("0-10000").error().message.find("more than 10000 tasks"),
            std::string::npos);
}

TEST(SubmitRequestTest, BodyCarriesDependenciesAndArray) {
  SubmitOptions o = WithCommand();
  o.after = {"12:ok", "13"};
  o.array = "0-2%2";
  auto body = BuildSubmitBody(o, "/home/u", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["after"],
            nlohmann::json::parse(R"([{"job":12,"kind":"ok"},{"job":13,"kind":"any"}])"));
  EXPECT_EQ((*body)["array"], nlohmann::json::parse(R"({"indices":[0,1,2],"max_running":2})"));
  o.array = "0-2";
  EXPECT_TRUE((*BuildSubmitBody(o, "/home/u", {}))["array"]["max_running"].is_null());
  o.after = {"nope"};
  EXPECT_FALSE(BuildSubmitBody(o, "/home/u", {}).ok());
}

TEST(SubmitRequestTest, ConstraintsBecomeNodeLabelsAndALaterOneWins) {
  SubmitOptions o = WithCommand();
  o.constraints = {"rack=a", "zone=x", "rack=b"};  // directives first, command line last
  auto body = BuildSubmitBody(o, "/home/u", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["node_labels"], nlohmann::json::parse(R"({"rack":"b","zone":"x"})"));
  o.constraints = {"rack"};
  auto bad = BuildSubmitBody(o, "/home/u", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--constraint: 'rack' is not KEY=VALUE; e.g. rack=a");
  o.constraints = {"rack=a b"};
  EXPECT_NE(BuildSubmitBody(o, "/home/u", {}).error().message.find("is not a label"),
            std::string::npos);
}

TEST(SubmitRequestTest, GpuShareAndMemoryAreSentOnlyWhenGiven) {
  SubmitOptions o = WithCommand();
  auto plain = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->contains("gpu_share"));
  EXPECT_FALSE(plain->contains("gpu_mem_mib"));
  o.gpu_share = "0.25";
  o.gpu_mem = "20G";
  auto body = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["gpu_share"], "0.25");
  EXPECT_EQ((*body)["gpu_mem_mib"], 20'480);
  o.gpus = "1";  // one GPU is what a fraction is of
  EXPECT_TRUE(BuildSubmitBody(o, "/tmp", {}).ok());
  o.gpu_share.reset();
  o.gpu_mem = "512";  // a bare number is MiB
  EXPECT_EQ((*BuildSubmitBody(o, "/tmp", {}))["gpu_mem_mib"], 512);
}

TEST(SubmitRequestTest, CpusAndMemoryAreSentOnlyWhenGivenAndErrorsNameTheOption) {
  SubmitOptions o = WithCommand();
  auto plain = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->contains("cpus"));
  EXPECT_FALSE(plain->contains("mem_mib"));
  o.cpus = "8";
  o.mem = "64G";
  auto body = BuildSubmitBody(o, "/tmp", {});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["cpus"], 8);
  EXPECT_EQ((*body)["mem_mib"], 65'536);
  for (const char* wrong : {"0", "-2", "eight", "1.5", "9999999"}) {
    o.cpus = wrong;
    auto bad = BuildSubmitBody(o, "/tmp", {});
    ASSERT_FALSE(bad.ok()) << wrong;
    EXPECT_EQ(
        bad.error().message.rfind("--cpus: '" + std::string(wrong) + "' is not a CPU count", 0), 0U)
        << bad.error().message;
  }
  o.cpus = "2";
  for (const char* wrong : {"64X", "lots", "0", "2.5G"}) {
    o.mem = wrong;
    auto bad = BuildSubmitBody(o, "/tmp", {});
    ASSERT_FALSE(bad.ok()) << wrong;
    EXPECT_EQ(bad.error().message.rfind("--mem: ", 0), 0U) << bad.error().message;
  }
}

TEST(SubmitRequestTest, GpuShareErrorsNameTheOption) {
  SubmitOptions o = WithCommand();
  for (const char* wrong : {"0", "1.5", "quarter", "0.0001", "25%"}) {
    o.gpu_share = wrong;
    auto bad = BuildSubmitBody(o, "/tmp", {});
    ASSERT_FALSE(bad.ok()) << wrong;
    EXPECT_EQ(bad.error().message.rfind("--gpu-share: '" + std::string(wrong) + "'", 0), 0U)
        << bad.error().message;
  }
  o.gpu_share.reset();
  o.gpu_mem = "20 GB";
  EXPECT_EQ(BuildSubmitBody(o, "/tmp", {}).error().message.rfind("--gpu-mem: ", 0), 0U);
  // A fraction is of one GPU on one node.
  o.gpu_mem.reset();
  o.gpu_share = "0.5";
  o.gpus = "2";
  auto two = BuildSubmitBody(o, "/tmp", {});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message.rfind("--gpus: a fractional job", 0), 0U) << two.error().message;
  o.gpus.reset();
  o.nodes = "2";
  EXPECT_FALSE(BuildSubmitBody(o, "/tmp", {}).ok());
}

}  // namespace
}  // namespace gf
