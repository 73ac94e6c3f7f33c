#include "slurm/slurm_control.h"

#include <utility>

#include "core/printable_text.h"
#include "core/tool_run.h"

namespace gf {
namespace {

// scontrol's answer for a cluster of 100,000 jobs is ~150 MB; what is kept must hold the whole
// answer, or the first jobs would be lost without a word.
constexpr std::size_t kJobsOutputLimit = std::size_t{1} << 30;

class SlurmCommands final : public SlurmControl {
 public:
  explicit SlurmCommands(SlurmCommandsOptions options) : options_(std::move(options)) {}

  Result<std::vector<SlurmJob>> Jobs() override {
    GF_ASSIGN_OR_RETURN(
        std::string out,
        Run({options_.scontrol, "--details", "--oneliner", "show", "job"}, kJobsOutputLimit));
    return ParseShowJobs(out);
  }

  Status Cancel(std::int64_t job) override {
    return Done(Run({options_.scancel, std::to_string(job)}));
  }

  Status Requeue(std::int64_t job) override {
    return Done(Run({options_.scontrol, "requeue", std::to_string(job)}));
  }

  Status DrainNode(const std::string& node, const std::string& reason) override {
    return Done(
        Run({options_.scontrol, "update", "nodename=" + node, "state=drain", "reason=" + reason}));
  }

  Status ResumeNode(const std::string& node) override {
    return Done(Run({options_.scontrol, "update", "nodename=" + node, "state=resume"}));
  }

 private:
  static Status Done(const Result<std::string>& ran) {
    return ran.ok() ? OkStatus() : Status(ran.error());
  }

  // The command's output when it exits 0; otherwise kUnavailable naming the command and
  // quoting its last output (Slurm's own error: "Invalid job id specified", ...).
  Result<std::string> Run(std::vector<std::string> argv, std::size_t keep = 4096) {
    std::string shown;
    for (const std::string& a : argv) {
      shown += shown.empty() ? "" : " ";
      shown += a;
    }
    const ToolOutcome outcome = RunTool(ToolRun{
        .command = "", .timeout = options_.timeout, .argv = std::move(argv), .keep_output = keep});
    if (!outcome.passed) {
      std::string said = outcome.output.substr(0, 400);
      while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) {
        said.pop_back();
      }
      return Unavailable("Slurm: `" + EscapeControl(shown) + "` failed (" + outcome.detail +
                         (said.empty() ? "" : ": " + EscapeControl(said)) + ")");
    }
    return outcome.output;
  }

  SlurmCommandsOptions options_;
};

}  // namespace

std::unique_ptr<SlurmControl> MakeSlurmCommands(SlurmCommandsOptions options) {
  return std::make_unique<SlurmCommands>(std::move(options));
}

}  // namespace gf
