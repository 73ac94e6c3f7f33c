// SlurmControl: what the companion server (`gpufleet server --slurm`, issue #23) asks of Slurm —
// its jobs (`scontrol -d -o show job`), and the actions gpufleet takes through Slurm instead of
// doing them itself: end a job (`scancel`), requeue one (`scontrol requeue`), drain and resume a
// node (`scontrol update nodename=… state=drain|resume reason=…`).
//
// The interface lets the controller's tests record the actions without a Slurm;
// `MakeSlurmCommands` runs Slurm's own clients, as the user the server runs as (root on a
// head node, or the SlurmUser: both may cancel, requeue and drain), with SLURM_CONF from the
// server's environment. Every call waits for its command (at most the timeout): call it off the
// state thread. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

#include "slurm/slurm_jobs.h"

namespace gf {

class SlurmControl {
 public:
  virtual ~SlurmControl() = default;
  // Every job slurmctld knows (pending, running, and ended within its MinJobAge).
  virtual Result<std::vector<SlurmJob>> Jobs() = 0;
  // Ends the job (Slurm signals it, then kills it after its KillWait).
  virtual Status Cancel(std::int64_t job) = 0;
  // Puts a running job back in Slurm's queue (it must be requeueable: Requeue=1).
  virtual Status Requeue(std::int64_t job) = 0;
  virtual Status DrainNode(const std::string& node, const std::string& reason) = 0;
  virtual Status ResumeNode(const std::string& node) = 0;
};

struct SlurmCommandsOptions {
  std::string scontrol = "scontrol";  // looked up in PATH unless a path
  std::string scancel = "scancel";
  Millis timeout{30 * 1000};
};

std::unique_ptr<SlurmControl> MakeSlurmCommands(SlurmCommandsOptions options = {});

}  // namespace gf
