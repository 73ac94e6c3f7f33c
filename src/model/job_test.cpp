#include "model/job.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(JobStateTest, RoundTripsNames) {
  for (JobState s : {JobState::kPending,
                     JobState::kStarting,
                     JobState::kRunning,
                     JobState::kCompleted,
                     JobState::kFailed,
                     JobState::kCancelled,
                     JobState::kTimeout,
                     JobState::kPreempted,
                     JobState::kNodeFail}) {
    EXPECT_EQ(*ParseJobState(ToString(s)), s);
  }
  EXPECT_EQ(*ParseJobState("running"), JobState::kRunning);
  EXPECT_FALSE(ParseJobState("DONE").ok());
}

TEST(JobStateTest, TransitionsFollowTheStateMachine) {
  EXPECT_TRUE(CanTransition(JobState::kPending, JobState::kStarting));
  EXPECT_TRUE(CanTransition(JobState::kStarting, JobState::kRunning));
  EXPECT_TRUE(CanTransition(JobState::kRunning, JobState::kTimeout));
  EXPECT_TRUE(CanTransition(JobState::kPending, JobState::kCancelled));
  EXPECT_FALSE(CanTransition(JobState::kPending, JobState::kRunning));
  EXPECT_FALSE(CanTransition(JobState::kCompleted, JobState::kRunning));
  EXPECT_FALSE(CanTransition(JobState::kCancelled, JobState::kPending));
  EXPECT_TRUE(CanTransition(JobState::kRunning, JobState::kPreempted));
  EXPECT_TRUE(CanTransition(JobState::kPreempted, JobState::kPending));
  EXPECT_FALSE(CanTransition(JobState::kPending, JobState::kPreempted));
  // Not requeued (--no-requeue): a preempted job is cancelled, one lost with its node fails.
  EXPECT_TRUE(CanTransition(JobState::kPreempted, JobState::kCancelled));
  EXPECT_TRUE(CanTransition(JobState::kNodeFail, JobState::kFailed));
  EXPECT_TRUE(CanTransition(JobState::kNodeFail, JobState::kPending));
  EXPECT_FALSE(CanTransition(JobState::kPreempted, JobState::kFailed));
  EXPECT_FALSE(CanTransition(JobState::kNodeFail, JobState::kCompleted));
  EXPECT_TRUE(IsTerminal(JobState::kTimeout));
  EXPECT_FALSE(IsTerminal(JobState::kPreempted));
}

TEST(PriorityTest, ParsesAnyWellFormedNameAndRejectsOthersNamingTheRule) {
  EXPECT_EQ(*ParsePriorityClass("high"), PriorityClass::kHigh);
  EXPECT_EQ(ParsePriorityClass("urgent")->name, "urgent");  // existence is the config's business
  EXPECT_EQ(ParsePriorityClass("gpu-batch_2")->name, "gpu-batch_2");
  EXPECT_TRUE(ParsePriorityClass(std::string(kMaxPriorityClassName, 'a')).ok());
  for (const std::string& bad : {std::string(),
                                 std::string("Urgent"),
                                 std::string("two words"),
                                 std::string("a.b"),
                                 std::string(kMaxPriorityClassName + 1, 'a')}) {
    const auto parsed = ParsePriorityClass(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().message.rfind("priority: '" + bad + "' is not a class name", 0), 0U)
        << parsed.error().message;
    EXPECT_NE(parsed.error().message.find("lower-case letters, digits"), std::string::npos);
  }
}

TEST(PriorityTest, ComparesByName) {
  EXPECT_EQ(PriorityClass{.name = "low"}, PriorityClass::kLow);
  EXPECT_NE(PriorityClass::kHigh, PriorityClass::kLow);
  EXPECT_EQ(ToString(PriorityClass::kNormal), "normal");
}

JobSpec Valid() {
  JobSpec s;
  s.argv = {"true"};
  s.workdir = "/tmp";
  return s;
}

TEST(EnvListTest, TheLastValueWinsAndASetChangesItInPlace) {
  EnvList env = {{"A", "1"}, {"B", "2"}, {"A", "3"}};
  EXPECT_EQ(EnvValue(env, "A"), "3");  // as the shim would leave it: set one after another
  EXPECT_EQ(EnvValue(env, "C"), "");
  SetEnvValue(env, "A", "three");
  SetEnvValue(env, "C", "new");
  EXPECT_EQ(EnvValue(env, "A"), "three");
  const EnvList want = {{"A", "1"}, {"B", "2"}, {"A", "three"}, {"C", "new"}};
  EXPECT_EQ(env, want);
}

TEST(ValidateSpecTest, NamesTheField) {
  EXPECT_TRUE(ValidateSpec(Valid()).ok());
  auto s = Valid();
  s.request.gpus = -1;
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("gpus:", 0), 0u);
  s = Valid();
  s.argv.clear();
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("command:", 0), 0u);
  s = Valid();
  s.workdir = "rel";
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("workdir:", 0), 0u);
  s = Valid();
  s.env = {{"1BAD", "x"}};
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("env:", 0), 0u);
  s = Valid();
  s.checkpoint_signal = 9;  // SIGKILL cannot be caught: no checkpoint possible
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("checkpoint_signal: 9", 0), 0u);
  s = Valid();
  s.priority = PriorityClass{.name = "Not A Name"};
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("priority:", 0), 0u);
}

// An explicit name (--name, the API's "name") with a control character is refused, naming
// the field and where: it would reach root's terminal and e-mail subjects (issue #20).
TEST(ValidateSpecTest, RefusesControlCharactersInTheName) {
  auto s = Valid();
  s.name = "eval-\x1b]0;owned\x07";
  const auto refused = ValidateSpec(s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "name: byte 5 (\\x1b) is a control character or not UTF-8; give a job name of "
            "printable text (--name)");
  const std::vector<std::string> bad_names = {
      "a\nb", "a\rBcc: x", std::string("a\0b", 3), "a\xc2\x9b", "\xff"};
  for (const std::string& bad : bad_names) {
    s.name = bad;
    EXPECT_EQ(ValidateSpec(s).error().message.rfind("name: byte", 0), 0U) << bad;
  }
  s.name = std::string(129, 'x');
  EXPECT_EQ(ValidateSpec(s).error().message.rfind("name: 129 bytes is too long", 0), 0U);
  s.name = "训练-résumé";  // printable UTF-8 is a name like any other
  EXPECT_TRUE(ValidateSpec(s).ok());
}

// The default name comes from argv[0], which is any bytes: escaped and bounded, never refused.
TEST(DefaultJobNameTest, IsTheCommandsBaseNameMadePrintable) {
  EXPECT_EQ(DefaultJobName("/usr/bin/python3"), "python3");
  EXPECT_EQ(DefaultJobName("train.sh"), "train.sh");
  EXPECT_EQ(DefaultJobName("./x\x1b]0;owned\x07"), "x\\x1b]0;owned\\x07");
  EXPECT_EQ(DefaultJobName("/tmp/a\r\nb"), "a\\x0d\\x0ab");
  const std::string long_name = DefaultJobName(std::string(300, '\x1b'));
  EXPECT_EQ(long_name.size(), 128U);
  JobSpec s = Valid();
  s.name = long_name;
  EXPECT_TRUE(ValidateSpec(s).ok());  // what it makes passes the explicit name's check
}

TEST(CheckpointSignalTest, ParsesNamesAndNumbersAndRefusesUncatchable) {
  EXPECT_EQ(Valid().checkpoint_signal, 15);  // SIGTERM by default
  EXPECT_EQ(*ParseCheckpointSignal("USR1"), 10);
  EXPECT_EQ(*ParseCheckpointSignal("sigusr2"), 12);
  EXPECT_EQ(*ParseCheckpointSignal("15"), 15);
  EXPECT_EQ(CheckpointSignalName(10), "USR1");
  EXPECT_EQ(CheckpointSignalName(9), "9");
  for (std::string_view bad : {"KILL", "STOP", "9", "", "USR3"}) {
    auto parsed = ParseCheckpointSignal(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find("USR1"), std::string::npos);
  }
}

TEST(JobSignalTest, ParsesNamesWithOrWithoutSigAndNumbers) {
  EXPECT_EQ(*ParseJobSignal("USR1"), 10);
  EXPECT_EQ(*ParseJobSignal("SIGUSR1"), 10);
  EXPECT_EQ(*ParseJobSignal("sigusr2"), 12);
  EXPECT_EQ(*ParseJobSignal("term"), 15);
  EXPECT_EQ(*ParseJobSignal("INT"), 2);
  EXPECT_EQ(*ParseJobSignal("HUP"), 1);
  EXPECT_EQ(*ParseJobSignal("CONT"), 18);
  EXPECT_EQ(*ParseJobSignal("10"), 10);
  EXPECT_EQ(*ParseJobSignal("40"), 40);  // a real-time signal, by number
  EXPECT_EQ(JobSignalName(10), "USR1");
  EXPECT_EQ(JobSignalName(40), "40");
}

TEST(JobSignalTest, RefusesNonSignalsNamingTheFieldWithExamples) {
  for (std::string_view bad : {"", "USR3", "0", "65", "-1", "1x", "SIG"}) {
    auto parsed = ParseJobSignal(bad, "--signal");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(parsed.error().message.starts_with("--signal: ")) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find("USR1, USR2, HUP"), std::string::npos) << bad;
  }
  // KILL always ends the job: that is cancel, and the message says so.
  for (std::string_view kill : {"KILL", "SIGKILL", "9"}) {
    auto parsed = ParseJobSignal(kill);
    ASSERT_FALSE(parsed.ok()) << kill;
    EXPECT_NE(parsed.error().message.find("gpufleet cancel JOB ends it"), std::string::npos);
  }
}

TEST(CombineHostUsageTest, AddsCpuAndKeepsThePeak) {
  const HostUsage total = CombineHostUsage({.cpu_ms = 1500, .peak_memory_kib = 4096},
                                           {.cpu_ms = 500, .peak_memory_kib = 1024});
  EXPECT_EQ(total, (HostUsage{.cpu_ms = 2000, .peak_memory_kib = 4096}));
}

TEST(CombineUsageTest, AddsCountsWeighsMeansAndKeepsPeaks) {
  JobUsage first{10, 50, 70, 1000, 300};
  JobUsage second{30, 90, 95, 500, 700};
  JobUsage total = CombineUsage(first, second);
  EXPECT_EQ(total.samples, 40);
  EXPECT_DOUBLE_EQ(total.mean_util_pct, 80);  // (10*50 + 30*90) / 40
  EXPECT_EQ(total.peak_util_pct, 95);
  EXPECT_EQ(total.peak_memory_mib, 1000);
  EXPECT_EQ(total.energy_mj, 1000);
  EXPECT_EQ(CombineUsage(JobUsage{}, JobUsage{}).mean_util_pct, 0);
}

// Issue #7: shares are milli-GPUs and memory MiB, parsed without floats.
TEST(FractionTest, SharesAndMemorySizesParseExactlyAndBadOnesNameTheField) {
  EXPECT_EQ(ParseGpuShare("0.25").value(), 250);
  EXPECT_EQ(ParseGpuShare(".5").value(), 500);
  EXPECT_EQ(ParseGpuShare("1").value(), 1000);
  EXPECT_EQ(ParseGpuShare("0.001").value(), 1);
  for (const char* bad : {"0", "1.5", "0.0001", "-0.5", "abc", "", ".", "2", "0.3x"}) {
    auto r = ParseGpuShare(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("gpu-share: ", 0), 0U) << r.error().message;
  }
  EXPECT_EQ(ParseMemoryMib("20G").value(), 20480);
  EXPECT_EQ(ParseMemoryMib("20GiB").value(), 20480);
  EXPECT_EQ(ParseMemoryMib("512").value(), 512);
  EXPECT_EQ(ParseMemoryMib("512m").value(), 512);
  EXPECT_EQ(ParseMemoryMib("1T").value(), 1024 * 1024);
  for (const char* bad : {"0", "G", "20X", "-1G", "1.5G", "9999999999G"}) {
    auto r = ParseMemoryMib(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("gpu-mem: ", 0), 0U) << r.error().message;
  }
  EXPECT_EQ(GpuAmountText(250), "0.25");
  EXPECT_EQ(GpuAmountText(2000), "2");
  EXPECT_EQ(GpuAmountText(1125), "1.125");
}

// Issue #24: host CPUs and memory per node, errors naming the field.
TEST(HostRequestTest, CpuCountsAndMemorySizesParseAndBadOnesNameTheField) {
  EXPECT_EQ(ParseCpuCount("8").value(), 8);
  EXPECT_EQ(ParseCpuCount("65536").value(), kMaxJobCpus);
  for (const char* bad : {"0", "-1", "", "8.5", "x", "65537", "1000000"}) {
    auto r = ParseCpuCount(bad, "--cpus");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("--cpus: '" + std::string(bad) + "' is not a CPU count", 0),
              0U)
        << r.error().message;
  }
  EXPECT_EQ(ParseMemoryMib("64G", "--mem").value(), 65'536);
  EXPECT_EQ(ParseMemoryMib("lots", "--mem").error().message.rfind("--mem: 'lots'", 0), 0U);
  JobRequest r;
  EXPECT_FALSE(AsksHost(r));
  EXPECT_TRUE(ValidateHostRequest(r).ok());
  r.cpus = 8;
  r.memory_mib = 65'536;
  EXPECT_TRUE(AsksHost(r));
  EXPECT_TRUE(ValidateHostRequest(r).ok());
  EXPECT_EQ(DescribeHostRequest(r), "8 CPUs, 64 GiB memory");
  r.cpus = -1;
  EXPECT_EQ(ValidateHostRequest(r).error().message.rfind("cpus: -1 ", 0), 0U);
  r.cpus = 1;
  r.memory_mib = kMaxJobMemoryMib + 1;
  EXPECT_EQ(ValidateHostRequest(r).error().message.rfind("mem: ", 0), 0U);
  EXPECT_EQ(FormatMib(512), "512 MiB");
  EXPECT_EQ(FormatMib(1536), "1.5 GiB");
  EXPECT_EQ(FormatMib(1000), "1000 MiB");
  EXPECT_EQ(FormatMib(262'144), "256 GiB");
}

TEST(FractionTest, AFractionIsOfOneGpuOnOneNode) {
  JobRequest r;
  r.gpu_milli = 250;
  EXPECT_TRUE(ValidateFraction(r).ok());
  r.gpus = 2;
  EXPECT_EQ(ValidateFraction(r).error().message.rfind("gpus: ", 0), 0U);
  r.gpus = 1;
  r.nodes = 2;
  EXPECT_FALSE(ValidateFraction(r).ok());
  r.nodes = 1;
  r.gpu_milli = 1001;
  EXPECT_EQ(ValidateFraction(r).error().message.rfind("gpu-share: ", 0), 0U);
  JobRequest whole;
  whole.gpus = 8;
  EXPECT_TRUE(ValidateFraction(whole).ok());  // not fractional: nothing to check
}

}  // namespace
}  // namespace gf
