// SharePool: the GPUs that hold fractional jobs (issue #7) during one scheduling pass: those in
// shared or mps mode (SharingMode) that take work, on up nodes, with the compute (milli-GPU)
// and memory (MiB) their running jobs leave free.
//
// Whole-GPU jobs never see these GPUs (GpuPool keeps exclusive ones only) and fractional jobs
// never see exclusive ones, so the two pools never compete for a GPU within a pass.
//
// What a fractional request takes of a GPU of M MiB:
// - compute: its --gpu-share, and at least the fraction of M its --gpu-mem is (rounded up to a
//   milli-GPU): a job that holds half the memory counts as half the GPU, for packing, quotas
//   and accounting alike;
// - memory: its --gpu-mem, else its share of M (rounded down to a MiB). That is its limit,
//   which the controller holds it to.
// Placement fills the GPUs already shared first: of the GPUs that fit, the one left with the
// least free compute (then memory) wins, ties by node name and GPU index; with the policy's
// SharePlacement::kFirstFit (`[sharing] placement = "first-fit"`, a baseline), the first GPU
// that fits in node-name, GPU-index order. An mps GPU serves one
// Unix user at a time (an MPS server runs as one user), so it takes a job only while it holds
// none or only that user's.
//
// Fractional jobs neither reserve nor preempt (yet): one that does not fit pends, with the
// reason WhyNot gives, and is considered again at the next pass.
//
// Built from the snapshot when a pass first meets a fractional job; a pass owns its pool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/pending_reason.h"
#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf {

struct ShareGpu {
  const NodeSnapshot* node = nullptr;
  const Gpu* gpu = nullptr;
  std::string model;  // lower case, for matching --gpu-type
  int free_milli = 0;
  std::int64_t free_mib = 0;
  std::optional<std::string> mps_user{};  // the user an mps GPU serves now (it holds jobs)
};

// What a request takes of one GPU.
struct ShareFit {
  int gpu = -1;  // position in SharePool::Gpus()
  int milli = 0;
  std::int64_t memory_mib = 0;
};

// The compute and memory `request` (IsFractional) takes of a GPU with `gpu_memory_mib` MiB.
ShareFit ShareOf(const JobRequest& request, std::int64_t gpu_memory_mib);

class SharePool {
 public:
  explicit SharePool(const ClusterSnapshot& cluster,
                     SharePlacement placement = SharePlacement::kFullest);

  // The GPU `user`'s fractional `request` goes to now, as the header says; nullopt if none.
  std::optional<ShareFit> FindFit(const JobRequest& request, const std::string& user) const;
  // Takes `fit` (from FindFit) for `user`.
  void Take(const ShareFit& fit, const std::string& user);
  Allocation ToAllocation(const ShareFit& fit) const;
  // Why FindFit found nothing, for the job's pending reason.
  PendingReason WhyNot(const JobRequest& request, const std::string& user) const;

  const std::vector<ShareGpu>& Gpus() const { return gpus_; }
  // Changes with every Take (what later jobs of the pass see).
  std::uint64_t Generation() const { return generation_; }

 private:
  // Whether `gpu` may hold `request` at all (model and node labels), whatever it has free.
  static bool Admits(const ShareGpu& gpu, const JobRequest& request);

  std::vector<ShareGpu> gpus_;  // by node name, then index
  SharePlacement placement_;
  std::uint64_t generation_ = 0;
};

}  // namespace gf
