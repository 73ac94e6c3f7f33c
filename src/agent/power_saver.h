// PowerSaver: the node's optional power policy (issue #8). A GPU that has had no job for
// `idle_after` is capped to `idle_limit_mw` (raised to the card's least limit, and never at or
// above its default: such a card is left alone); before a job is launched on a capped GPU its
// default limit is restored, and the launch waits for that; when the agent stops, every capped
// GPU is restored. Setting a limit needs root: a GPU that refuses (no permission, no power
// management, an old driver) is logged once and left alone, and the rest carry on.
//
// A GPU counts as in use while a job launched (or recovered) here holds it, or while a sample
// shows a process on it (a job the agent re-attached to, or work outside gpufleet): in use, it
// is never capped, and a cap found on it is lifted. Its idle time counts from the moment it was
// last in use (or from Start).
//
// With the load forecast (KeepReady; the controller sends it, controller/ready_gpus.h): of the
// idle GPUs, the `n` that were in use last (the warmest: placement tends to reuse them) are kept
// ready, a cap on one of them lifted ahead of the demand the forecast expects; the others are
// capped once idle `settle`, without waiting `idle_after`, as no demand is forecast for them.
// Without a forecast (none sent, or nullopt: the controller has not seen an hour yet) the idle
// wait alone decides.
//
// Every cap and restore is one log line (spdlog). Nothing is persisted: a limit left by a
// crashed agent is put back to the default by the next Start (unless it is the cap and the GPU
// is idle: then it is kept as the cap).
//
// Ownership: the backend and clock must outlive it. Thread-safety: every method takes one mutex
// and holds it across the backend calls it makes, so a launch (agent thread) and a tick (sampler
// thread) never race over one GPU: a launch that comes while a cap is being set waits for it and
// then restores. The backend's power calls must be thread-safe (gpu_backend.h).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "gpu/gpu_backend.h"
#include "model/gpu_sample.h"
#include "model/node.h"

namespace gf {

struct PowerSaverOptions {
  std::int64_t idle_limit_mw = 0;  // the cap of an idle GPU, milliwatts (> 0)
  Millis idle_after{0};            // how long a GPU is without a job before it is capped
  // With a forecast: how long a GPU the forecast does not want ready is idle before its cap
  // (a job's end followed by the next job's start is not idleness). The simulator's
  // `--idle-power-after` comparison uses the same minute (sim/idle_power.h).
  Millis settle{std::chrono::minutes(1)};
};

class PowerSaver {
 public:
  PowerSaver(PowerSaverOptions options, GpuBackend& backend, const Clock& clock);
  PowerSaver(const PowerSaver&) = delete;
  PowerSaver& operator=(const PowerSaver&) = delete;

  // Reads every GPU's limits and takes charge of those that can be capped; `running` are the
  // jobs already running here (an agent restarted under them) and their GPUs. A limit found
  // away from the default is restored (see above).
  void Start(const std::vector<Gpu>& gpus, const std::map<JobId, std::vector<GpuUuid>>& running);

  // Before `job` is launched on `gpus`: marks them in use and restores the default limit of each
  // capped one, returning once that is done. A restore that fails is logged; the launch goes on.
  void JobStarting(JobId job, const std::vector<GpuUuid>& gpus);

  // `job` ended (or never started): its GPUs that no other job holds are idle from now.
  void JobEnded(JobId job);

  // Periodic (each sampling round, with its samples): GPUs with processes are in use; GPUs idle
  // for idle_after are capped.
  void Tick(const std::vector<GpuSample>& samples);

  // How many idle GPUs the load forecast wants ready now (see above); nullopt: no forecast.
  // Takes effect at the next Tick.
  void KeepReady(std::optional<int> gpus);

  // At shutdown: restores every capped GPU. Capping resumes only after another Start.
  void RestoreAll();

  // The GPUs capped now, for tests.
  std::vector<GpuUuid> Capped() const;

 private:
  struct ManagedGpu {
    int index = 0;
    GpuUuid uuid;
    std::int64_t default_mw = 0;
    std::int64_t cap_mw = 0;  // the idle limit raised to the card's least
    bool capped = false;
    bool refused = false;  // refused for good: dropped at the end of the call
    Time idle_since{};
  };

  // The helpers below REQUIRE mu_ held; each logs what it did or why it could not.
  // Reads one GPU's limits and takes charge of it, or logs why it is left alone.
  void Manage(const Gpu& gpu, bool in_use);
  bool InUse(const GpuUuid& uuid) const;
  ManagedGpu* Find(const GpuUuid& uuid);
  // Sets a limit; false when it failed (a refusal also marks the GPU refused).
  bool Apply(ManagedGpu& gpu, std::int64_t limit_mw);
  // `idle_for`: the idle wait it met, for the log line.
  void Cap(ManagedGpu& gpu, Millis idle_for);
  void Restore(ManagedGpu& gpu, std::string_view why);
  void DropRefused();

  const PowerSaverOptions options_;
  GpuBackend& backend_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<ManagedGpu> gpus_;                // GUARDED_BY(mu_): the GPUs in its charge
  std::map<JobId, std::vector<GpuUuid>> jobs_;  // GUARDED_BY(mu_): jobs running, their GPUs
  bool stopped_ = false;                        // GUARDED_BY(mu_): after RestoreAll
  std::optional<int> keep_ready_;               // GUARDED_BY(mu_): KeepReady
};

}  // namespace gf
