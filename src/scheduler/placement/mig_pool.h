// MigPool: the MIG devices that MIG jobs (`--mig 3g.40gb`, issue #7) go to during one
// scheduling pass: those of GPUs in mig mode with MIG on in the hardware that take work
// (TakesMigJobs: not failed, no mode change or new layout waiting), on up nodes, that no job
// holds.
//
// A job takes one free device of its profile. Of the GPUs with one, the GPU with the fewest
// free devices wins (ties: node name, GPU index): devices are packed onto GPUs already in use,
// so that whole GPUs stay free for a layout change, which waits for its GPU to empty.
// What a device counts as in quotas and accounting: its compute slices over the GPU's (its
// largest profile's: 7 on A100 and H100), in milli-GPUs, so a 3g.40gb device is 0.429 of a GPU;
// its memory is the device's.
//
// Like fractional jobs, MIG jobs neither reserve nor preempt: one that does not fit pends with
// the reason WhyNot gives. Built when a pass first meets a MIG job; a pass owns its pool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/pending_reason.h"
#include "model/snapshot.h"

namespace gf {

struct MigDevice {
  const NodeSnapshot* node = nullptr;
  const Gpu* gpu = nullptr;
  const MigInstance* instance = nullptr;
  int gpu_block = 0;  // its GPU's position in MigPool's free counts
  bool free = true;
};

// The device a request goes to, and what it counts as.
struct MigFit {
  int device = -1;  // position in MigPool::Devices()
  int milli = 0;
  std::int64_t memory_mib = 0;
};

class MigPool {
 public:
  explicit MigPool(const ClusterSnapshot& cluster);

  // The free device of `request.mig_profile` the job goes to now, as the header says.
  std::optional<MigFit> FindFit(const JobRequest& request, const std::string& user) const;
  void Take(const MigFit& fit, const std::string& user);
  Allocation ToAllocation(const MigFit& fit) const;
  // Why FindFit found nothing, for the job's pending reason.
  PendingReason WhyNot(const JobRequest& request, const std::string& user) const;

  const std::vector<MigDevice>& Devices() const { return devices_; }
  std::uint64_t Generation() const { return generation_; }

 private:
  bool Admits(const MigDevice& device, const JobRequest& request) const;
  int FreeOnGpu(const MigDevice& device) const;

  std::vector<MigDevice> devices_;  // by node name, GPU index, then gpu_instance_id
  std::vector<int> free_on_gpu_;    // per GPU with devices (gpu_block): how many are free
  std::uint64_t generation_ = 0;
};

}  // namespace gf
