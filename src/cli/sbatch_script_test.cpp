#include "cli/sbatch_script.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/client_commands.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

SlurmMapping TestMapping() {
  SlurmMapping m;
  m.partition = {{"gpu", "normal"}, {"debug", "low"}};
  m.qos = {{"urgent", "high"}};
  m.gpu_type = {{"a100", "A100-SXM4-80GB"}};
  return m;
}

// The #SBATCH lines of `text` read as a script named job.sh.
Result<SbatchOptions> Read(const std::string& text) {
  std::istringstream in(text);
  return ReadSbatchLines(ParseScriptDirectives(in).sbatch, "job.sh", TestMapping());
}

std::string ErrorOf(const std::string& text) {
  Result<SbatchOptions> r = Read(text);
  return r.ok() ? "(read)" : r.error().message;
}

TEST(SlurmTimeTest, ReadsEverySlurmFormat) {
  const std::pair<const char*, std::int64_t> cases[] = {{"90", 5400},
                                                        {"5:30", 330},
                                                        {"01:30:00", 5400},
                                                        {"2-0", 172800},
                                                        {"1-12", 129600},
                                                        {"1-2:30", 95400},
                                                        {"1-00:00:10", 86410},
                                                        {"0:45", 45}};
  for (const auto& [text, seconds] : cases) {
    auto t = ParseSlurmTime(text);
    ASSERT_TRUE(t.ok()) << text << ": " << t.error().message;
    ASSERT_TRUE(t->has_value()) << text;
    EXPECT_EQ((*t)->count(), seconds) << text;
  }
  for (const char* none : {"UNLIMITED", "infinite", "0", "00:00:00"}) {
    auto t = ParseSlurmTime(none);
    ASSERT_TRUE(t.ok()) << none;
    EXPECT_FALSE(t->has_value()) << none;
  }
  for (const char* bad : {"", "1h", "1:2:3:4", "-5", "1-", "a-1", "1-2-3", ":30", "1:-2"}) {
    auto t = ParseSlurmTime(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.error().message.find("is not a Slurm time"), std::string::npos);
  }
}

TEST(SbatchScriptTest, DirectivesStopAtTheFirstCommandAndCommentedOnesDoNotCount) {
  std::istringstream in(
      "#!/bin/bash\r\n#SBATCH --time=5\r\n##SBATCH --gres=gpu:8\n# SBATCH --gres=gpu:8\n"
      "#SBATCHX --foo\n\n#GPUFLEET --gpus=2\n   \nhostname\n#SBATCH --nodes=2\n");
  const ScriptDirectives d = ParseScriptDirectives(in);
  ASSERT_EQ(d.sbatch.size(), 1U);
  EXPECT_EQ(d.sbatch[0].number, 2);
  EXPECT_EQ(d.sbatch[0].text, " --time=5");
  EXPECT_EQ(d.gpufleet, (std::vector<std::string>{"--gpus=2"}));
}

TEST(SbatchScriptTest, EachHonouredDirectiveSetsItsOption) {
  auto r = Read(
      "#SBATCH --gres=gpu:a100:2 --nodes 2 -t 1:00:00 --job-name 'a b' --account=vision\n"
      "#SBATCH --output=o-%j --error=e-%j --array=0-3%2 --dependency=afterok:7\n"
      "#SBATCH --partition=gpu --export=ALL,X=1 --chdir=/scratch --no-requeue\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const SubmitOptions& o = r->options;
  EXPECT_EQ(o.gpus, "2");
  EXPECT_EQ(o.gpu_type, "A100-SXM4-80GB");
  EXPECT_EQ(o.nodes, "2");
  EXPECT_EQ(o.time, "3600s");
  EXPECT_EQ(o.name, "a b");
  EXPECT_EQ(o.team, "vision");
  EXPECT_EQ(o.output, "o-%j");
  EXPECT_EQ(o.error, "e-%j");
  EXPECT_EQ(o.array, "0-3%2");
  EXPECT_EQ(o.after, (std::vector<std::string>{"7:ok"}));
  EXPECT_EQ(o.priority, "normal");
  EXPECT_EQ(o.export_env, "ALL,X=1");
  EXPECT_EQ(o.workdir, "/scratch");
  EXPECT_EQ(o.requeue, false);
  EXPECT_TRUE(r->not_honoured.empty());
}

TEST(SbatchScriptTest, GpuRequestsFollowSlurmsMeaning) {
  EXPECT_EQ(Read("#SBATCH --gres=gpu\n")->options.gpus, "1");
  EXPECT_EQ(Read("#SBATCH --gres=gpu:v100\n")->options.gpu_type, "v100");  // unmapped: as is
  EXPECT_EQ(Read("#SBATCH --gpus=8 -N 4\n")->options.gpus, "2");           // total
  EXPECT_EQ(Read("#SBATCH --gpus-per-node=8 -N 4\n")->options.gpus, "8");  // per node
  EXPECT_EQ(Read("#SBATCH --gres=gpu:2 --gpus=3\n")->options.gpus, "3");   // the last wins
  EXPECT_EQ(Read("#SBATCH --time=5\n")->options.gpus, "0");  // asks for none, gets none
  auto mixed = Read("#SBATCH --gres=gpu:1,shard:2\n");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->options.gpus, "1");
  ASSERT_EQ(mixed->not_honoured.size(), 1U);
  EXPECT_EQ(mixed->not_honoured[0].rfind("--gres=shard:2 (", 0), 0U);
}

TEST(SbatchScriptTest, CpusAndMemoryFollowSlurmsMeaning) {
  auto per_task = Read("#SBATCH --cpus-per-task=8 --mem=64G\n");
  ASSERT_TRUE(per_task.ok()) << per_task.error().message;
  EXPECT_EQ(per_task->options.cpus, "8");
  EXPECT_EQ(per_task->options.mem, "65536M");
  EXPECT_TRUE(per_task->not_honoured.empty());
  EXPECT_EQ(Read("#SBATCH -c 4\n")->options.cpus, "4");
  EXPECT_EQ(Read("#SBATCH --mem=512\n")->options.mem, "512M");  // Slurm's unit: MB
  // Per GPU and per CPU, as Slurm multiplies them out per node.
  auto per_gpu = Read("#SBATCH --gpus-per-node=4 --cpus-per-gpu=6 --mem-per-gpu=20G\n");
  ASSERT_TRUE(per_gpu.ok());
  EXPECT_EQ(per_gpu->options.cpus, "24");
  EXPECT_EQ(per_gpu->options.mem, "81920M");
  EXPECT_EQ(Read("#SBATCH -c 4 --mem-per-cpu=2G\n")->options.mem, "8192M");
  EXPECT_FALSE(Read("#SBATCH --gres=gpu:1\n")->options.cpus.has_value());  // none asked
  // --mem=0 (Slurm: the whole node) is not honoured, with why.
  auto whole = Read("#SBATCH --mem=0\n");
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(whole->options.mem.has_value());
  ASSERT_EQ(whole->not_honoured.size(), 1U);
  EXPECT_EQ(whole->not_honoured[0].rfind("--mem=0 (gpufleet reserves an amount", 0), 0U);
  EXPECT_EQ(ErrorOf("#SBATCH --mem=lots\n")
                .rfind("job.sh line 1: #SBATCH --mem=lots: 'lots' is not a memory size", 0),
            0U);
  EXPECT_EQ(ErrorOf("#SBATCH --cpus-per-task=0\n")
                .rfind("job.sh line 1: #SBATCH --cpus-per-task=0: not a CPU count", 0),
            0U);
}

TEST(SbatchScriptTest, DefaultOutputIsSlurms) {
  EXPECT_EQ(Read("#SBATCH --gres=gpu:1\n")->options.output, "slurm-%j.out");
  EXPECT_EQ(Read("#SBATCH --array=1-2\n")->options.output, "slurm-%A_%a.out");
}

TEST(SbatchScriptTest, MalformedDirectivesAreRefusedWithTheLineAndTheDirective) {
  EXPECT_EQ(ErrorOf("#!/bin/sh\n#SBATCH --time=soon\n")
                .rfind("job.sh line 2: #SBATCH --time=soon: 'soon' is not a Slurm time", 0),
            0U);
  EXPECT_EQ(ErrorOf("#SBATCH --array=5-1\n").rfind("job.sh line 1: #SBATCH --array=5-1: '5-1'", 0),
            0U);
  EXPECT_EQ(ErrorOf("#SBATCH --gpus=a100:\n").rfind("job.sh line 1: #SBATCH --gpus=a100:: not", 0),
            0U);
  EXPECT_EQ(
      ErrorOf("#SBATCH --export=A-B\n").rfind("job.sh line 1: #SBATCH --export=A-B: 'A-B'", 0), 0U);
  EXPECT_EQ(ErrorOf("#SBATCH --dependency=afterok:x\n")
                .rfind("job.sh line 1: #SBATCH --dependency=afterok:x: 'x' is not a job id", 0),
            0U);
  EXPECT_EQ(ErrorOf("#SBATCH --dependency=singleton\n")
                .rfind("job.sh line 1: #SBATCH --dependency=singleton: 'singleton' is not", 0),
            0U);
  EXPECT_EQ(
      ErrorOf("#SBATCH --job-name='open\n").rfind("job.sh line 1: #SBATCH  --job-name='open", 0),
      0U);
  EXPECT_EQ(ErrorOf("#SBATCH -N\n"), "job.sh line 1: #SBATCH -N: needs a value (e.g. -N=VALUE)");
}

TEST(SbatchScriptTest, WarningNamesEveryDirectiveNotHonouredOnOneLine) {
  auto r = Read("#SBATCH --mem-bind=local --qos=nope --constraint=a100 --hold\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string warning = NotHonouredWarning("job.sh", r->not_honoured);
  EXPECT_EQ(warning.find('\n'), std::string::npos);
  for (const char* named : {"--mem-bind=local (",
                            "--qos=nope (no [slurm.qos] entry",
                            "--constraint=a100 (",
                            "--hold ("}) {
    EXPECT_NE(warning.find(named), std::string::npos) << named << " in " << warning;
  }
  EXPECT_EQ(warning.rfind("warning: job.sh: #SBATCH directives not honoured: ", 0), 0U);
  EXPECT_EQ(NotHonouredWarning("job.sh", {}), "");
}

// A script on disk, submitted through ApplyScriptDirectives as `gpufleet submit` does.
class ScriptFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gf-sbatch-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::function<Result<SlurmMapping>()> Mapping() {
    return [] {
      return Result<SlurmMapping>(TestMapping());
    };
  }

  fs::path dir_;
};

TEST_F(ScriptFileTest, CommandLineWinsOverGpufleetLinesWhichWinOverSbatchLines) {
  std::ofstream(dir_ / "job.sh") << "#!/bin/bash\n#SBATCH --gres=gpu:4 --time=10 -J sb -A t1\n"
                                    "#SBATCH --dependency=afterok:5\n"
                                    "#GPUFLEET --gpus=2 --name=gf --after=6\n"
                                    "python x.py\n";
  SubmitOptions o;
  o.command = {(dir_ / "job.sh").string()};
  o.gpus = "1";
  o.after = {"7"};
  auto warning = ApplyScriptDirectives(o, dir_.string(), Mapping());
  ASSERT_TRUE(warning.ok()) << warning.error().message;
  EXPECT_EQ(*warning, "");
  EXPECT_EQ(o.gpus, "1");                                            // command line
  EXPECT_EQ(o.name, "gf");                                           // #GPUFLEET
  EXPECT_EQ(o.time, "600s");                                         // #SBATCH
  EXPECT_EQ(o.team, "t1");                                           // #SBATCH
  EXPECT_EQ(o.after, (std::vector<std::string>{"5:ok", "6", "7"}));  // they add up
}

TEST_F(ScriptFileTest, MappingIsReadOnlyForAScriptWithSbatchLines) {
  std::ofstream(dir_ / "plain.sh") << "#!/bin/sh\n#GPUFLEET --gpus=1\necho hi\n";
  SubmitOptions o;
  o.command = {(dir_ / "plain.sh").string()};
  bool asked = false;
  auto warning = ApplyScriptDirectives(o, dir_.string(), [&asked]() -> Result<SlurmMapping> {
    asked = true;
    return InvalidArgument("client.toml: broken");
  });
  ASSERT_TRUE(warning.ok()) << warning.error().message;
  EXPECT_FALSE(asked);
  EXPECT_FALSE(o.output.has_value());  // gpufleet's own log, as before
}

#ifdef GF_SBATCH_DATA_DIR
// tests/data/sbatch: real-world style scripts, each with NAME.expect.json saying what the
// submission sends (a subset of the body), what it warns of, or why it is refused.
TEST_F(ScriptFileTest, ScriptsDirectoryRunsWithTheSameMeaningOrIsRefusedNamingTheDirective) {
  int scripts = 0;
  for (const auto& entry : fs::directory_iterator(GF_SBATCH_DATA_DIR)) {
    if (entry.path().extension() != ".sh") {
      continue;
    }
    ++scripts;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    fs::path expect_path = entry.path();
    expect_path.replace_extension(".expect.json");
    std::ifstream expect_file(expect_path);
    ASSERT_TRUE(expect_file) << "no " << expect_path;
    const json expect = json::parse(expect_file);

    SubmitOptions o;
    o.command = {entry.path().string()};
    auto warning = ApplyScriptDirectives(o, "/home/alice", Mapping());
    Result<json> body =
        warning.ok()
            ? BuildSubmitBody(o,
                              "/home/alice",
                              {{"HOME", "/home/alice"}, {"PATH", "/usr/bin:/bin"}, {"FOO", "bar"}})
            : Result<json>(warning.error());
    if (expect.contains("error")) {
      ASSERT_FALSE(body.ok()) << body->dump();
      EXPECT_NE(body.error().message.find(expect["error"].get<std::string>()), std::string::npos)
          << body.error().message;
      continue;
    }
    ASSERT_TRUE(body.ok()) << body.error().message;
    const json want = expect.value("body", json::object());  // items() must not outlive it
    for (const auto& [key, value] : want.items()) {
      if (key == "env") {
        for (const auto& [var, text] : value.items()) {
          EXPECT_EQ(body->at("env").value(var, json()), text) << "env " << var;
        }
      } else {
        EXPECT_EQ(body->value(key, json()), value) << key;
      }
    }
    for (const auto& key : expect.value("absent", json::array()).get<std::vector<std::string>>()) {
      EXPECT_FALSE(body->contains(key)) << key;
    }
    for (const auto& var :
         expect.value("absent_env", json::array()).get<std::vector<std::string>>()) {
      EXPECT_FALSE(body->at("env").contains(var)) << var;
    }
    if (expect.contains("warning")) {
      EXPECT_EQ(*warning, expect["warning"].get<std::string>());
    }
    if (expect.contains("mail")) {  // --mail-user / --mail-type: the job's subscription
      const json& mail = expect["mail"];
      EXPECT_EQ(o.mail_user.value_or(""), mail.value("user", "")) << "mail user";
      EXPECT_EQ(o.mail_events.value_or(""), mail.value("events", "")) << "mail events";
    }
    for (const auto& part :
         expect.value("warning_has", json::array()).get<std::vector<std::string>>()) {
      EXPECT_NE(warning->find(part), std::string::npos) << part << " in " << *warning;
      EXPECT_EQ(warning->find('\n'), std::string::npos);
    }
  }
  EXPECT_GE(scripts, 12);
}
#endif

}  // namespace
}  // namespace gf
