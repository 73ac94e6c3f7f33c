// MIG placement through Decide (issue #7): a MIG job takes a free device of its profile, packed
// onto the GPU with the fewest free devices; held devices, GPUs outside mig mode and GPUs whose
// new layout waits take none; the reasons say what is missing.
#include "scheduler/placement/mig_pool.h"

#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace gf {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::RunningOn;

// GPU `gpu` of `node` in mig mode with these devices (MIG-<node>-<gpu>-<n>), as an H100 offers.
void MakeMig(NodeSnapshot& node, int gpu, const std::vector<std::string>& layout) {
  Gpu& g = node.node.gpus[static_cast<std::size_t>(gpu)];
  g.sharing = SharingMode::kMig;
  g.mig_enabled = true;
  g.mig_profiles = {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"};
  for (std::size_t i = 0; i < layout.size(); ++i) {
    g.mig_instances.push_back(
        MigInstance{.profile = layout[i],
                    .uuid = GpuUuid("MIG-" + node.node.name.value() + "-" + std::to_string(gpu) +
                                    "-" + std::to_string(i)),
                    .gpu_instance_id = static_cast<int>(i) + 1,
                    .compute_instance_id = 0,
                    .slices = MigProfileSlices(layout[i]),
                    .memory_mib = layout[i] == "3g.40gb" ? 40192 : 9856});
  }
}

QueuedJob MigJob(std::int64_t id, const std::string& profile) {
  QueuedJob job = MakeJob(id, 1);
  job.request.mig_profile = profile;
  job.user = "alice";
  return job;
}

Decisions DecideAll(const ClusterSnapshot& cluster, std::vector<QueuedJob> jobs) {
  return Decide(cluster, Queue{std::move(jobs)}, PolicyConfig{}, FromUnixMillis(0));
}

TEST(MigPoolTest, AJobTakesAFreeDeviceOfItsProfilePackedOntoTheBusierGpu) {
  NodeSnapshot node = MakeNode("n", 3, "H100-80GB");
  MakeMig(node, 0, {"3g.40gb", "3g.40gb"});
  MakeMig(node, 1, {"3g.40gb", "1g.10gb", "1g.10gb"});
  ClusterSnapshot cluster{{node}};
  RunningJob holder = RunningOn(9, "n", {1});
  holder.allocation.mig = GpuUuid("MIG-n-1-1");  // one 1g.10gb of GPU 1 is held
  cluster.running.push_back(holder);
  cluster.nodes[0].allocated.insert(testing::Uuid("n", 1));

  const Decisions d = DecideAll(
      cluster,
      {MigJob(1, "3g.40gb"), MigJob(2, "1g.10gb"), MigJob(3, "1g.10gb"), MigJob(4, "3g.40gb")});
  ASSERT_EQ(d.starts.size(), 3U);
  // GPU 1 has 2 free devices, GPU 0 has 2: ties go to the first GPU; then GPU 0 has 1 free.
  EXPECT_EQ(d.starts[0].allocation.mig, GpuUuid("MIG-n-0-0"));
  EXPECT_EQ(d.starts[0].allocation.gpus, std::vector<GpuUuid>{testing::Uuid("n", 0)});
  EXPECT_EQ(d.starts[0].allocation.gpu_milli, 3 * 1000 / 7);  // 3 of 7 slices: 0.428
  EXPECT_EQ(d.starts[0].allocation.gpu_memory_mib, 40192);
  EXPECT_EQ(d.starts[1].allocation.mig, GpuUuid("MIG-n-1-2"));  // the one free 1g.10gb
  EXPECT_EQ(d.starts[1].allocation.gpu_milli, 142);
  EXPECT_EQ(d.starts[2].allocation.mig, GpuUuid("MIG-n-0-1"));  // GPU 0 (1 free) before GPU 1
  ASSERT_EQ(d.pending.size(), 1U);
  EXPECT_EQ(d.pending[0].job, JobId(3));
  EXPECT_EQ(d.pending[0].reason.text, "needs a MIG device 1g.10gb; all 2 of them are held");
  EXPECT_EQ(d.pending[0].reason.code, PendingCode::kNoFreeGpus);
  EXPECT_EQ(d.pending[0].reason.stage, PendingStage::kPlacement);
  EXPECT_TRUE(d.pending[0].reason.can_ever_fit);
}

TEST(MigPoolTest, OnlyGpusInMigModeWithNoLayoutWaitingTakeMigJobs) {
  NodeSnapshot node = MakeNode("n", 3, "H100-80GB");
  MakeMig(node, 0, {"3g.40gb"});
  MakeMig(node, 1, {"3g.40gb"});
  MakeMig(node, 2, {"3g.40gb"});
  node.node.gpus[0].mig_layout_next = std::vector<std::string>{"7g.80gb"};
  node.node.gpus[1].sharing = SharingMode::kExclusive;  // MIG on, but the admin has not chosen mig
  node.node.gpus[2].mig_enabled = false;                // mig chosen, the card's MIG is off
  const Decisions d = DecideAll(ClusterSnapshot{{node}}, {MigJob(1, "3g.40gb"), MakeJob(2, 1)});
  // Not even the whole-GPU job: a GPU with MIG on runs work on its MIG devices only.
  ASSERT_EQ(d.starts.size(), 0U) << d.starts[0].allocation.gpus[0].value();
  ASSERT_EQ(d.pending.size(), 2U);
  EXPECT_EQ(d.pending[0].reason.text,
            "needs a MIG device 3g.40gb; no GPU in mig mode that takes work now has one; an "
            "admin sets a layout with `gpufleet gpu mig-layout NODE GPU 3g.40gb,...`");
  EXPECT_EQ(d.pending[0].reason.code, PendingCode::kNoMigDevice);
  EXPECT_EQ(d.pending[0].reason.stage, PendingStage::kPlacement);
  EXPECT_FALSE(d.pending[0].reason.can_ever_fit);
}

TEST(MigPoolTest, TheReasonListsTheFreeDevicesOfOtherProfiles) {
  NodeSnapshot node = MakeNode("n", 1, "H100-80GB");
  MakeMig(node, 0, {"1g.10gb", "1g.10gb"});
  const Decisions d = DecideAll(ClusterSnapshot{{node}}, {MigJob(1, "3g.40gb")});
  ASSERT_EQ(d.pending.size(), 1U);
  EXPECT_NE(d.pending[0].reason.text.find("(free devices: 2x 1g.10gb)"), std::string::npos)
      << d.pending[0].reason.text;
}

TEST(MigPoolTest, SubmissionNeedsAGpuThatOffersTheProfile) {
  NodeSnapshot node = MakeNode("n", 2, "H100-80GB");
  JobRequest request;
  request.mig_profile = "3g.40gb";
  EXPECT_NE(CheckFeasible(ClusterSnapshot{{node}}, request)
                .error()
                .message.find("mig: no GPU has MIG mode on"),
            std::string::npos);
  MakeMig(node, 1, {});
  EXPECT_TRUE(CheckFeasible(ClusterSnapshot{{node}}, request).ok());
  request.mig_profile = "2g.24gb";
  EXPECT_EQ(CheckFeasible(ClusterSnapshot{{node}}, request).error().message,
            "mig: no GPU offers MIG profile 2g.24gb; profiles offered: 1g.10gb, 2g.20gb, "
            "3g.40gb, 4g.40gb, 7g.80gb");
}

}  // namespace
}  // namespace gf
