// MpsDaemons: the agent's NVIDIA MPS control daemons, one per GPU in mps mode (issue #7).
//
// Under MPS, the kernels of several processes share a GPU's SMs at once, each held to the
// share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and memory (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) the
// controller put in its environment. A client finds its daemon through
// CUDA_MPS_PIPE_DIRECTORY; one daemon per GPU, each with its own pipe and log directories
// under `dir`, keeps the GPUs apart (a client may use only its one GPU).
//
// The controller marks a launch for MPS by those two variables (it sets them only for a job on
// an mps GPU); the agent then starts that GPU's daemon if it does not run yet
// (`nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES naming the GPU) and adds the pipe and
// log directories to the job's environment. The daemon runs as the agent's user (root); it
// starts each MPS server as the user of its first client, which is why the scheduler puts one
// user at a time on an mps GPU (the daemon makes a second user wait for the first's server to
// end). A daemon outlives the agent, as jobs do: a later agent finds it (`get_server_list`
// answers) and uses it. It is told to quit (`quit` on the control's stdin) when a job without
// MPS is launched on its GPU: the controller changes a GPU's mode only once it is empty.
//
// Thread-safety: one thread (the agent's).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"  // EnvList

namespace gf {

struct MpsOptions {
  // The control program, a path or a name looked up in PATH. "" = the node has no MPS (its
  // GPUs are simulated): a job on an mps GPU runs without a daemon, as on a shared GPU.
  std::string control;
  std::filesystem::path dir;  // <dir>/<GPU uuid>/pipe and .../log
  Millis timeout{30 * 1000};  // for starting or stopping one daemon
};

class MpsDaemons {
 public:
  explicit MpsDaemons(MpsOptions options);
  MpsDaemons(const MpsDaemons&) = delete;
  MpsDaemons& operator=(const MpsDaemons&) = delete;

  // Whether a job with this environment is to run under its GPU's MPS daemon.
  static bool Wanted(const EnvList& env);
  // The variables that take a job on GPU `uuid` to its daemon, started first if need be.
  // Errors: kFailedPrecondition when the control program could not start the daemon (not
  // installed, or it failed), with its output and the fix.
  Result<EnvList> Join(const GpuUuid& uuid);
  // A job without MPS is launched on GPU `uuid`: its daemon, if one runs, is told to quit.
  // Logs, never fails.
  void Leave(const GpuUuid& uuid);

 private:
  MpsOptions options_;
  std::filesystem::path DirOf(const GpuUuid& uuid) const { return options_.dir / uuid.value(); }
  // Whether the control program answers for GPU `uuid`'s daemon (it runs).
  bool Answers(const GpuUuid& uuid) const;
  std::map<GpuUuid, bool> running_;  // what the agent knows of each GPU's daemon
};

}  // namespace gf
