#include "controller/controller.h"

#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller_fixture.h"
#include "controller/controller_test_util.h"
#include "core/duration.h"
#include "model/terminal.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::seconds;

JobSpec Spec(int gpus, PriorityClass p = PriorityClass::kNormal) {
  JobSpec s;
  s.argv = {"sleep", "100"};
  s.workdir = "/tmp";
  s.request.gpus = gpus;
  s.priority = std::move(p);
  return s;
}

class ControllerTest : public ControllerFixture {
 protected:
  bool StateIs(JobId id, JobState s) { return Get(id).state == s; }
};

// A reading of GPU-<index> of FourGpuNode at `time`, busy with `pids` (attributed to `job`).
GpuSample Reading(int index,
                  Time time,
                  int util,
                  std::int64_t energy_mj,
                  std::optional<JobId> job = std::nullopt) {
  GpuSample s;
  s.uuid = GpuUuid("GPU-" + std::to_string(index));
  s.time = time;
  s.memory_total_mib = 81920;
  s.memory_used_mib = 2048;
  s.memory_free_mib = 81920 - 2048;
  s.util_gpu_pct = util;
  s.energy_mj = energy_mj;
  if (job) {
    GpuProcessSample p;
    p.pid = 777;
    p.used_memory_mib = 2000;
    p.job = job;
    s.processes.push_back(p);
  }
  return s;
}

TEST_F(ControllerTest, JobRunsThroughItsLifecycle) {
  auto job = controller_->Submit(alice_, Spec(2));
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->state, JobState::kPending);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  Job launched = agent_->launched()[0];
  EXPECT_EQ(launched.id, job->id);
  ASSERT_TRUE(launched.allocation);
  EXPECT_EQ(launched.allocation->gpus, (std::vector<GpuUuid>{GpuUuid("GPU-0"), GpuUuid("GPU-1")}));
  EXPECT_EQ(Get(job->id).state, JobState::kStarting);

  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited with 0"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));
  EXPECT_EQ(Get(job->id).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return agent_->acked().size() == 1; }));

  auto events = controller_->JobEvents(alice_, job->id);
  ASSERT_TRUE(events.ok());
  ASSERT_GE(events->size(), 4u);  // submit, starting, running, completed
  EXPECT_EQ((*events)[0].kind, "submit");
}

TEST_F(ControllerTest, NonZeroExitFails) {
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  controller_->OnJobExited(JobExitReport{job->id, 3, std::nullopt, clock_.Now(), "exited with 3"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kFailed); }));
  EXPECT_EQ(Get(job->id).exit_code, 3);
}

TEST_F(ControllerTest, HighPriorityStartsBeforeEarlierWork) {
  auto blocker = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(blocker->id, 1, clock_.Now());
  auto normal = controller_->Submit(alice_, Spec(4, PriorityClass::kNormal));
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] {
    return Get(normal->id).reason.find("behind job " + std::to_string(high->id.value())) !=
           std::string::npos;
  })) << Get(normal->id).reason;
  // The blocker (normal) has not run the minimum run time: high waits to preempt it.
  EXPECT_EQ(Get(high->id).reason,
            "waiting to preempt job " + std::to_string(blocker->id.value()) +
                " (normal) on gpu01, possible at " +
                FormatUtcSeconds(clock_.Now() + std::chrono::minutes(10)) +
                " (minimum run time 10m)");
  controller_->OnJobExited(JobExitReport{blocker->id, 0, std::nullopt, clock_.Now(), "done"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
  EXPECT_EQ(Get(normal->id).state, JobState::kPending);
  EXPECT_EQ(Get(low->id).state, JobState::kPending);
}

TEST_F(ControllerTest, SubmitRejectsAClassTheConfigDoesNotList) {
  auto urgent = controller_->Submit(alice_, Spec(1, PriorityClass{.name = "urgent"}));
  ASSERT_FALSE(urgent.ok());
  EXPECT_EQ(urgent.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(urgent.error().message,
            "priority: no class 'urgent'; the classes are high, normal, low");
  JobSpec bad = Spec(1);
  bad.priority = PriorityClass{.name = "Not A Name"};
  EXPECT_EQ(controller_->Submit(alice_, bad).error().message.rfind("priority: 'Not A Name'", 0),
            0U);
}

TEST_F(ControllerTest, AdminDefinedClassesAndTheDefaultClass) {
  policy_.classes = {PriorityClassPolicy{.name = "urgent", .rank = 0, .preempts = {"batch"}},
                     PriorityClassPolicy{.name = "batch", .rank = 1}};
  policy_.default_class = "batch";
  Boot();
  JobSpec unnamed = Spec(1);
  unnamed.priority = PriorityClass{};  // the API's "no priority given"
  auto job = controller_->Submit(alice_, unnamed);
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->spec.priority.name, "batch");
  EXPECT_TRUE(controller_->Submit(alice_, Spec(1, PriorityClass{.name = "urgent"})).ok());
  EXPECT_EQ(controller_->Submit(alice_, Spec(1)).error().message,
            "priority: no class 'normal'; the classes are urgent, batch");
}

TEST_F(ControllerTest, AJobWhoseClassLeftTheConfigWaitsLastAndSaysWhy) {
  policy_.classes.push_back(PriorityClassPolicy{.name = "urgent", .rank = -1});
  Boot();
  auto blocker = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(blocker->id, 1, clock_.Now());
  auto urgent = controller_->Submit(alice_, Spec(4, PriorityClass{.name = "urgent"}));
  ASSERT_TRUE(urgent.ok()) << urgent.error().message;
  auto low = controller_->Submit(bob_, Spec(4, PriorityClass::kLow));
  ASSERT_TRUE(WaitFor([&] {
    return Get(low->id).reason.find("behind job " + std::to_string(urgent->id.value())) !=
           std::string::npos;
  })) << Get(low->id).reason;
  policy_.classes.pop_back();  // the admin drops the class and restarts gpufleet up
  Boot({blocker->id});
  const std::string note =
      "its class 'urgent' is not configured, so it goes after every configured class";
  ASSERT_TRUE(WaitFor([&] { return Get(urgent->id).reason.find(note) != std::string::npos; }))
      << Get(urgent->id).reason;
  EXPECT_NE(Get(urgent->id).reason.find("behind job " + std::to_string(low->id.value())),
            std::string::npos)
      << Get(urgent->id).reason;
  EXPECT_EQ(Get(urgent->id).spec.priority.name, "urgent");  // kept as submitted
}

TEST_F(ControllerTest, TimeLimitKillsAndEndsInTimeout) {
  JobSpec spec = Spec(1);
  spec.time_limit = seconds(60);
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  clock_.Advance(seconds(59));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(agent_->killed().empty());
  clock_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_NE(agent_->killed()[0].second.find("time limit 1m reached"), std::string::npos);
  controller_->OnJobExited(JobExitReport{job->id, 143, 15, clock_.Now(), "killed by SIGTERM"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kTimeout); }));
}

TEST_F(ControllerTest, CancelPendingAndRunning) {
  auto running = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(running->id, 1, clock_.Now());
  auto pending = controller_->Submit(alice_, Spec(1));
  auto c1 = controller_->CancelJob(alice_, pending->id);
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(c1->state, JobState::kCancelled);
  auto c2 = controller_->CancelJob(alice_, running->id);
  ASSERT_TRUE(c2.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  controller_->OnJobExited(JobExitReport{running->id, 137, 9, clock_.Now(), "killed"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(running->id, JobState::kCancelled); }));
  EXPECT_NE(Get(running->id).reason.find("cancelled by alice"), std::string::npos);
  auto again = controller_->CancelJob(alice_, running->id);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
}

// `gpufleet run`'s keys: to the agent of the job's node, from its owner only, while it runs,
// and only for a job that has a terminal.
TEST_F(ControllerTest, TerminalInputReachesTheRunningJobsAgentFromItsOwnerOnly) {
  JobSpec with_terminal = Spec(1);
  with_terminal.env.emplace_back(std::string(kTerminalVariable), "24x80");
  auto job = controller_->Submit(alice_, with_terminal);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  const TerminalInput keys{.data = "ls\n", .size = TerminalSize{30, 100}};
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kStarting); }));
  Status early = controller_->WriteTerminal(alice_, job->id, keys);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(early.error().message.find("while it runs"), std::string::npos)
      << early.error().message;

  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  Status typed = controller_->WriteTerminal(alice_, job->id, keys);
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  ASSERT_EQ(agent_->terminal().size(), 1u);
  EXPECT_EQ(agent_->terminal()[0].first, job->id);
  EXPECT_EQ(agent_->terminal()[0].second.data, "ls\n");
  EXPECT_EQ(agent_->terminal()[0].second.size, (TerminalSize{30, 100}));

  EXPECT_EQ(controller_->WriteTerminal(bob_, job->id, keys).error().code, ErrorCode::kNotFound);
  Status by_root = controller_->WriteTerminal(root_, job->id, keys);
  ASSERT_FALSE(by_root.ok());
  EXPECT_EQ(by_root.error().code, ErrorCode::kNotFound);
  EXPECT_NE(by_root.error().message.find("its owner's alone"), std::string::npos)
      << by_root.error().message;
  EXPECT_EQ(agent_->terminal().size(), 1u);  // neither reached the agent

  auto batch = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(WaitFor([&] { return StateIs(batch->id, JobState::kStarting); }));
  controller_->OnJobStarted(batch->id, 4243, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(batch->id, JobState::kRunning); }));
  Status no_terminal = controller_->WriteTerminal(alice_, batch->id, keys);
  ASSERT_FALSE(no_terminal.ok());
  EXPECT_NE(no_terminal.error().message.find("has no terminal"), std::string::npos)
      << no_terminal.error().message;
}

TEST_F(ControllerTest, UsersSeeAndTouchOnlyTheirOwnJobs) {
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(controller_->GetJob(bob_, job->id).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(controller_->CancelJob(bob_, job->id).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(controller_->ReadJobLog(bob_, LogRequest{.job = job->id}).error().code,
            ErrorCode::kNotFound);
  EXPECT_TRUE(controller_->ListJobs(bob_, JobFilter{})->empty());
  EXPECT_EQ(controller_->ListJobs(alice_, JobFilter{})->size(), 1u);
  EXPECT_EQ(controller_->ListJobs(bob_, JobFilter{false, "alice", 100}).error().code,
            ErrorCode::kPermissionDenied);
  EXPECT_TRUE(controller_->GetJob(root_, job->id).ok());
  Caller anonymous;
  EXPECT_EQ(controller_->Submit(anonymous, Spec(1)).error().code, ErrorCode::kPermissionDenied);
  EXPECT_TRUE(controller_->CancelJob(root_, job->id).ok());
}

// QueueOrder (GET /jobs' queue_position) is the pass's order: class first, then submit time,
// the positions `explain` gives; a started job leaves it.
TEST_F(ControllerTest, QueueOrderIsTheSchedulingOrderExplainNumbers) {
  auto blocker = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(blocker->id, 1, clock_.Now());
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  auto normal = controller_->Submit(alice_, Spec(4, PriorityClass::kNormal));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  const std::vector<JobId> want = {high->id, normal->id, low->id};
  ASSERT_TRUE(WaitFor([&] {
    auto order = controller_->QueueOrder(alice_);
    return order.ok() && *order == want;
  }));
  for (std::size_t i = 0; i < want.size(); ++i) {
    auto explained = controller_->ExplainJob(root_, want[i]);
    ASSERT_TRUE(explained.ok()) << explained.error().message;
    EXPECT_EQ(explained->position, static_cast<int>(i) + 1);
  }
  EXPECT_TRUE(controller_->CancelJob(root_, high->id).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto order = controller_->QueueOrder(alice_);
    return order.ok() && *order == std::vector<JobId>{normal->id, low->id};
  }));
}

TEST_F(ControllerTest, ExplainTellsTheOwnerWhatThePassDecides) {
  auto blocker = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(blocker->id, 1, clock_.Now());
  auto normal = controller_->Submit(alice_, Spec(4, PriorityClass::kNormal));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] {
    return Get(normal->id).reason.find("behind job " + std::to_string(high->id.value())) !=
           std::string::npos;
  })) << Get(normal->id).reason;

  auto explained = controller_->ExplainJob(alice_, normal->id);
  ASSERT_TRUE(explained.ok()) << explained.error().message;
  EXPECT_EQ(explained->state, "pending");
  EXPECT_EQ(explained->reason, Get(normal->id).reason);  // the pass's own reason
  EXPECT_EQ(explained->position, 2);
  EXPECT_EQ(explained->waiting, 2);
  ASSERT_FALSE(explained->ahead.empty());
  EXPECT_FALSE(explained->ahead[0].id.has_value());  // bob's: alice learns no id (issue #20)
  EXPECT_EQ(explained->ahead[0].priority, "high");
  ASSERT_FALSE(explained->nodes.empty());
  EXPECT_EQ(explained->nodes[0].node, NodeId("gpu01"));
  EXPECT_EQ(explained->nodes[0].verdict, "busy");

  // Another user's job does not exist for bob; root sees everything.
  EXPECT_EQ(controller_->ExplainJob(bob_, normal->id).error().code, ErrorCode::kNotFound);
  auto for_root = controller_->ExplainJob(root_, normal->id);
  ASSERT_TRUE(for_root.ok());
  ASSERT_FALSE(for_root->ahead.empty());
  EXPECT_EQ(for_root->ahead[0].id, high->id);
  EXPECT_EQ(controller_->ExplainJob(Caller{}, normal->id).error().code,
            ErrorCode::kPermissionDenied);

  auto running = controller_->ExplainJob(alice_, blocker->id);
  ASSERT_TRUE(running.ok()) << running.error().message;
  ASSERT_TRUE(running->running.has_value());
  EXPECT_EQ(running->running->allocation.node, NodeId("gpu01"));
  EXPECT_EQ(running->running->gpu_indexes, (std::vector<int>{0, 1, 2, 3}));

  ASSERT_TRUE(controller_->CancelJob(alice_, normal->id).ok());
  const auto ended = controller_->ExplainJob(alice_, normal->id);
  EXPECT_EQ(ended.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(ended.error().message.find("has ended (CANCELLED)"), std::string::npos);
}

// Issue #20: `explain` told a user the id and the end time of another user's running job.
// Who may read other users' jobs (operators, admins) still gets both.
// Issue #22: the controller learns run times from the runs that end and the stock policy
// orders by them: alice's "quick" ran 1 minute and "long" 2 hours on all 4 GPUs; while a
// blocker holds the GPUs, a long then a quick job wait, and quick goes first (place: submit +
// predicted GPU-time). The estimate shows on the job and in explain, and survives a restart.
TEST_F(ControllerTest, APredictedShortJobGoesBeforeALongerOneSubmittedFirst) {
  const auto named = [](const std::string& name) {
    JobSpec spec = Spec(4);
    spec.name = name;
    return spec;
  };
  const auto run = [&](const std::string& name, std::chrono::seconds length) {
    auto job = controller_->Submit(alice_, named(name));
    ASSERT_TRUE(job.ok()) << job.error().ToString();
    ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kStarting); }));
    controller_->OnJobStarted(job->id, 1, clock_.Now());
    ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
    clock_.Advance(length);
    controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited"});
    ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));
  };
  run("long", std::chrono::hours(2));
  run("quick", std::chrono::minutes(1));
  auto blocker = controller_->Submit(alice_, named("blocker"));
  ASSERT_TRUE(WaitFor([&] { return StateIs(blocker->id, JobState::kStarting); }));
  controller_->OnJobStarted(blocker->id, 1, clock_.Now());
  auto slow = controller_->Submit(alice_, named("long"));
  clock_.Advance(seconds(1));
  auto quick = controller_->Submit(alice_, named("quick"));
  ASSERT_TRUE(slow.ok() && quick.ok());
  ASSERT_TRUE(slow->prediction.has_value());  // in the submission's answer already
  EXPECT_EQ(slow->prediction->expected, Millis(std::chrono::hours(2)));
  EXPECT_EQ(slow->prediction->basis, "user+family+gpus");
  EXPECT_EQ(slow->prediction->explanation, "as long as alice's 1 run of long with 4 GPUs");
  ASSERT_TRUE(Get(quick->id).prediction.has_value());
  EXPECT_EQ(Get(quick->id).prediction->expected, Millis(std::chrono::minutes(1)));
  auto explained = controller_->ExplainJob(alice_, slow->id);
  ASSERT_TRUE(explained.ok()) << explained.error().message;
  ASSERT_TRUE(explained->prediction.has_value());
  EXPECT_EQ(explained->prediction->expected, Millis(std::chrono::hours(2)));
  EXPECT_EQ(explained->position, 2);  // behind quick
  // Its place: submitted, moved back by 2 hours on 4 GPUs (8 GPU-hours).
  ASSERT_TRUE(explained->priority.has_value() && explained->priority->place.has_value());
  EXPECT_EQ(*explained->priority->place, slow->submit_time + std::chrono::hours(8));

  // A restart learns the same from the store: the pending jobs are estimated again.
  Boot({blocker->id});
  ASSERT_TRUE(Get(slow->id).prediction.has_value());
  EXPECT_EQ(Get(slow->id).prediction->expected, Millis(std::chrono::hours(2)));

  const std::size_t before = agent_->launched().size();
  controller_->OnJobExited(JobExitReport{blocker->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == before + 1; }));
  EXPECT_EQ(agent_->launched().back().id, quick->id);
  EXPECT_TRUE(StateIs(slow->id, JobState::kPending));
}

TEST_F(ControllerTest, ExplainHidesOtherUsersJobsAndTheirEnds) {
  JobSpec limited = Spec(4);
  limited.time_limit = seconds(3600);
  auto bobs = controller_->Submit(bob_, limited);
  ASSERT_TRUE(bobs.ok()) << bobs.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(bobs->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(bobs->id, JobState::kRunning); }));
  auto alices = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(alices.ok()) << alices.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return !Get(alices->id).reason.empty(); }));

  const auto holds = [&](const Caller& caller) {
    auto explained = controller_->ExplainJob(caller, alices->id);
    EXPECT_TRUE(explained.ok()) << explained.error().ToString();
    EXPECT_EQ(explained->nodes.size(), 1u);
    return explained->nodes.at(0).held;
  };
  const std::vector<GpuHold> for_alice = holds(alice_);
  ASSERT_EQ(for_alice.size(), 4u);
  for (const GpuHold& hold : for_alice) {
    EXPECT_EQ(hold.kind, "running");
    EXPECT_FALSE(hold.job.has_value()) << "GPU " << hold.index;
    EXPECT_TRUE(hold.other_user);
    EXPECT_FALSE(hold.until.has_value()) << "GPU " << hold.index;  // bob's time limit
  }
  const Time end = Get(bobs->id).start_time.value_or(Time{}) + seconds(3600);
  for (const Caller& sees_all : {root_, TokenCaller(1002, "carol", Role::kOperator)}) {
    const std::vector<GpuHold> held = holds(sees_all);
    ASSERT_EQ(held.size(), 4u) << sees_all.user;
    EXPECT_EQ(held[0].job, bobs->id) << sees_all.user;
    EXPECT_FALSE(held[0].other_user);
    EXPECT_EQ(held[0].until, end) << sees_all.user;
  }
}

TEST_F(ControllerTest, InfeasibleSubmissionIsRejectedAndNotStored) {
  auto too_many = controller_->Submit(alice_, Spec(5));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(too_many.error().message.find("gpus"), std::string::npos);
  JobSpec typed = Spec(1);
  typed.request.gpu_type = "V100";
  EXPECT_EQ(controller_->Submit(alice_, typed).error().code, ErrorCode::kInvalidArgument);
  JobSpec empty = Spec(1);
  empty.argv.clear();
  EXPECT_EQ(controller_->Submit(alice_, empty).error().code, ErrorCode::kInvalidArgument);
  JobFilter all;
  all.include_finished = true;
  EXPECT_TRUE(controller_->ListJobs(root_, all)->empty());
}

// A running job whose supervisor the agent no longer has (the node rebooted) failed with its
// node: NODE_FAIL, back in the queue at its place, and started again.
TEST_F(ControllerTest, RestartReattachesRunningJobsAndRequeuesLostOnes) {
  auto kept = controller_->Submit(alice_, Spec(1));
  auto lost = controller_->Submit(alice_, Spec(1));
  auto ended = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 3; }));
  for (auto id : {kept->id, lost->id, ended->id}) {
    controller_->OnJobStarted(id, 1, clock_.Now());
  }
  ASSERT_TRUE(WaitFor([&] { return StateIs(ended->id, JobState::kRunning); }));
  Boot({kept->id}, {JobExitReport{ended->id, 0, std::nullopt, clock_.Now(), "exited with 0"}});
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<Job> launched = agent_->launched();
    return std::count_if(launched.begin(), launched.end(), [&](const Job& j) {
             return j.id == lost->id;
           }) == 1;  // new agent
  }));
  EXPECT_EQ(Get(lost->id).state, JobState::kStarting);
  auto events = controller_->JobEvents(root_, lost->id);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(std::any_of(events->begin(), events->end(), [](const Event& e) {
    return e.message.find("RUNNING -> NODE_FAIL: its supervisor was not found on gpu01") !=
           std::string::npos;
  }));
  EXPECT_EQ(Get(kept->id).state, JobState::kRunning);
  EXPECT_EQ(Get(ended->id).state, JobState::kCompleted);
  // Job ids keep increasing across the restart.
  auto next = controller_->Submit(alice_, Spec(1));
  EXPECT_GT(next->id.value(), ended->id.value());
}

TEST_F(ControllerTest, ConcurrentSubmissionsGetDistinctDurableIds) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::int64_t> ids;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        auto job = controller_->Submit(alice_, Spec(0));
        ASSERT_TRUE(job.ok());
        std::lock_guard lock(mu);
        ids.insert(job->id.value());
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * kPerThread));
  Boot();
  JobFilter all;
  all.include_finished = true;
  all.limit = 10'000;
  EXPECT_EQ(controller_->ListJobs(root_, all)->size(), ids.size());
}

TEST_F(ControllerTest, SamplesGiveLiveAndStoredJobUsage) {
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));

  const Time t0 = clock_.Now();
  controller_->OnSamples(NodeId("gpu01"), {Reading(0, t0, 40, 1'000, job->id)});
  controller_->OnSamples(NodeId("gpu01"), {Reading(0, t0 + seconds(1), 80, 4'000, job->id)});
  ASSERT_TRUE(WaitFor([&] {
    auto usage = Get(job->id).usage;
    return usage && usage->samples == 2;
  }));
  JobUsage live = *Get(job->id).usage;
  EXPECT_EQ(live.peak_util_pct, 80);
  EXPECT_DOUBLE_EQ(live.mean_util_pct, 60);
  EXPECT_EQ(live.energy_mj, 3'000);

  // The GPU list shows who holds the GPU, with the latest reading.
  auto gpus = controller_->ListGpus(bob_);
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 4U);
  EXPECT_EQ((*gpus)[0].job, job->id);
  EXPECT_EQ((*gpus)[0].user, "alice");
  EXPECT_EQ((*gpus)[0].team, "");  // no team, as quotas and usage records say it
  ASSERT_TRUE((*gpus)[0].sample);
  EXPECT_EQ((*gpus)[0].sample->util_gpu_pct, 80);
  ASSERT_EQ((*gpus)[0].holders.size(), 1U);  // a whole GPU: its one job, all of it
  EXPECT_EQ((*gpus)[0].holders[0].job, job->id);
  EXPECT_EQ((*gpus)[0].holders[0].share_milli, kWholeGpuMilli);
  EXPECT_EQ((*gpus)[0].holders[0].memory_limit_mib, 0);
  EXPECT_FALSE((*gpus)[1].job);
  EXPECT_TRUE((*gpus)[1].holders.empty());

  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));
  // Stored with the job, so it survives a restart.
  Boot();
  ASSERT_TRUE(Get(job->id).usage);
  EXPECT_EQ(Get(job->id).usage->energy_mj, 3'000);
  EXPECT_EQ(Get(job->id).usage->peak_util_pct, 80);
}

// Issue #7: an admin shares GPU 0; a quarter-GPU job goes there (not to a free exclusive GPU),
// sees its share in its environment, and when its processes use more than its memory limit
// the controller has the agent kill the largest one, with the cause in the job's events.
TEST_F(ControllerTest, SharedGpuTakesFractionalJobsAndHoldsThemToTheirMemory) {
  EXPECT_EQ(controller_->SetGpuMode(alice_, NodeId("gpu01"), "0", "shared").error().code,
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(controller_->SetGpuMode(root_, NodeId("gpu01"), "0", "sliced").error().code,
            ErrorCode::kInvalidArgument);
  auto shared = controller_->SetGpuMode(root_, NodeId("gpu01"), "0", "shared");
  ASSERT_TRUE(shared.ok()) << shared.error().ToString();
  EXPECT_EQ(shared->sharing, SharingMode::kShared);
  JobSpec spec = Spec(1);
  spec.request.gpu_milli = 250;
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  const Job launched = agent_->launched()[0];
  ASSERT_TRUE(launched.allocation);
  EXPECT_EQ(launched.allocation->gpus, std::vector<GpuUuid>{GpuUuid("GPU-0")});
  EXPECT_EQ(launched.allocation->gpu_milli, 250);
  EXPECT_EQ(launched.allocation->gpu_memory_mib, 20480);
  const auto& env = launched.spec.env;
  EXPECT_NE(
      std::find(env.begin(),
                env.end(),
                std::pair<std::string, std::string>{"GPUFLEET_GPU_MEMORY_LIMIT_MIB", "20480"}),
      env.end());
  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));

  GpuSample over = Reading(0, clock_.Now(), 90, 1'000, job->id);
  over.processes[0].used_memory_mib = 25'000;  // over its 20480 MiB
  controller_->OnSamples(NodeId("gpu01"), {over});
  ASSERT_TRUE(WaitFor([&] { return agent_->process_kills().size() == 1; }));
  EXPECT_EQ(agent_->process_kills()[0], (std::pair<JobId, std::uint32_t>{job->id, 777}));
  auto events = controller_->JobEvents(alice_, job->id);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(std::any_of(events->begin(), events->end(), [](const Event& e) {
    return e.kind == "memory_breach" &&
           e.message.find("killed its process 777") != std::string::npos;
  }));
  // A quarter GPU counts a quarter in the team's quota.
  auto quota = controller_->Quota(root_);
  ASSERT_TRUE(quota.ok());
  ASSERT_FALSE(quota->teams.empty());
  EXPECT_EQ(quota->teams[0].held_milli, 250);

  // The job is still over its limit after the grace ([sharing] memory_breach_grace, 30 s): its
  // other processes hold the memory. It is stopped whole, and ends FAILED with the cause.
  clock_.Advance(seconds(29));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(agent_->killed().empty());
  clock_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_NE(agent_->killed()[0].second.find("still over its GPU memory limit 30s after"),
            std::string::npos)
      << agent_->killed()[0].second;
  controller_->OnJobExited(JobExitReport{job->id, 143, 15, clock_.Now(), "killed by SIGTERM"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kFailed); }));
}

// A launch re-sent after the agent reconnects (the first never reached it) carries the same
// environment as the first: the share and its memory limit.
TEST_F(ControllerTest, ALaunchSentAgainKeepsTheShareEnvironment) {
  ASSERT_TRUE(controller_->SetGpuMode(root_, NodeId("gpu01"), "0", "shared").ok());
  JobSpec spec = Spec(1);
  spec.request.gpu_milli = 250;
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnAgentHello(AgentHello{TestNode(4), {}, {}});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  const Job first = agent_->launched()[0];
  const Job again = agent_->launched()[1];
  EXPECT_EQ(again.id, job->id);
  EXPECT_EQ(again.spec.env, first.spec.env);
  const std::pair<std::string, std::string> share{"GPUFLEET_GPU_SHARE", "0.25"};
  EXPECT_NE(std::find(again.spec.env.begin(), again.spec.env.end(), share), again.spec.env.end());
}

// MIG (issue #7): a GPU the agent reports with MIG on is in mig mode; a --mig job gets a free
// device of its profile (CUDA sees that device only); a new layout waits for the job to end,
// then goes to the agent; the GPU's next report with the new devices settles it.
TEST_F(ControllerTest, MigJobsGetADeviceAndALayoutWaitsForTheGpuToEmpty) {
  Node node = TestNode(4);
  Gpu& gpu = node.gpus[0];
  gpu.mig_enabled = true;
  gpu.mig_profiles = {"1g.10gb", "3g.40gb", "7g.80gb"};
  const auto device = [](int id, const std::string& profile, std::int64_t mib) {
    return MigInstance{.profile = profile,
                       .uuid = GpuUuid("MIG-" + std::to_string(id)),
                       .gpu_instance_id = id,
                       .compute_instance_id = 0,
                       .slices = MigProfileSlices(profile),
                       .memory_mib = mib};
  };
  gpu.mig_instances = {device(1, "3g.40gb", 40192), device(2, "3g.40gb", 40192)};
  controller_->OnAgentHello(AgentHello{node, {}, {}});
  // The hello is applied on the state thread: until then the node is known without its GPUs.
  const auto gpu0 = [&] {
    const std::vector<Node> nodes = *controller_->ListNodes(root_);
    return nodes.empty() || nodes[0].gpus.empty() ? Gpu{} : nodes[0].gpus[0];
  };
  ASSERT_TRUE(WaitFor([&] { return gpu0().mig_enabled; }));
  EXPECT_EQ(gpu0().sharing, SharingMode::kMig);
  auto refused = controller_->SetGpuMode(root_, NodeId("gpu01"), "0", "shared");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("has MIG mode on"), std::string::npos);
  EXPECT_EQ(controller_->SetGpuMode(root_, NodeId("gpu01"), "1", "mig").error().code,
            ErrorCode::kFailedPrecondition);  // MIG is off on GPU 1

  JobSpec spec = Spec(1);
  spec.request.mig_profile = "3g.40gb";
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  const Allocation held = *agent_->launched()[0].allocation;
  EXPECT_EQ(held.gpus, std::vector<GpuUuid>{GpuUuid("GPU-0")});
  EXPECT_EQ(held.mig, GpuUuid("MIG-1"));
  EXPECT_EQ(held.gpu_milli, 428);  // 3 of 7 slices
  EXPECT_EQ(held.gpu_memory_mib, 40192);
  JobSpec profile_missing = Spec(1);
  profile_missing.request.mig_profile = "2g.20gb";
  EXPECT_NE(controller_->Submit(alice_, profile_missing)
                .error()
                .message.find("no GPU offers MIG profile 2g.20gb"),
            std::string::npos);

  EXPECT_EQ(controller_->SetMigLayout(alice_, NodeId("gpu01"), "0", "7g.80gb").error().code,
            ErrorCode::kPermissionDenied);
  const std::string not_offered =
      controller_->SetMigLayout(root_, NodeId("gpu01"), "0", "2g.20gb").error().message;
  EXPECT_TRUE(not_offered.starts_with("layout: ")) << not_offered;
  EXPECT_NE(not_offered.find("MIG profile '2g.20gb' is not offered by this GPU (it offers 1g.10gb, "
                             "3g.40gb, 7g.80gb)"),
            std::string::npos)
      << not_offered;
  EXPECT_NE(controller_->SetMigLayout(root_, NodeId("gpu01"), "0", "3g.40gb,3g.40gb,3g.40gb")
                .error()
                .message.find("needs 9 compute slices"),
            std::string::npos);
  auto waiting = controller_->SetMigLayout(root_, NodeId("gpu01"), "0", "7g.80gb");
  ASSERT_TRUE(waiting.ok()) << waiting.error().ToString();
  EXPECT_EQ(waiting->mig_layout_next, std::vector<std::string>{"7g.80gb"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(agent_->mig_layouts().empty());  // job 1 still holds a device

  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "done"});
  ASSERT_TRUE(WaitFor([&] { return agent_->mig_layouts().size() == 1; }));
  EXPECT_EQ(agent_->mig_layouts()[0].first, GpuUuid("GPU-0"));
  EXPECT_EQ(agent_->mig_layouts()[0].second, std::vector<std::string>{"7g.80gb"});

  GpuSample applied = Reading(0, clock_.Now(), 0, 1'000);
  applied.mig_enabled = true;
  applied.mig = {MigSample{.instance = device(9, "7g.80gb", 80896)}};
  controller_->OnSamples(NodeId("gpu01"), {applied});
  ASSERT_TRUE(WaitFor([&] { return !gpu0().mig_layout_next.has_value(); }));
  EXPECT_EQ(gpu0().mig_instances, std::vector<MigInstance>{device(9, "7g.80gb", 80896)});
  EXPECT_EQ(agent_->mig_layouts().size(), 1U);  // sent once
}

// A breach that clears (the killed process held the excess) ends the watch: the job runs on.
TEST_F(ControllerTest, AMemoryBreachThatClearsLeavesTheJobRunning) {
  ASSERT_TRUE(controller_->SetGpuMode(root_, NodeId("gpu01"), "0", "shared").ok());
  JobSpec spec = Spec(1);
  spec.request.gpu_milli = 500;
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  GpuSample over = Reading(0, clock_.Now(), 90, 1'000, job->id);
  over.processes[0].used_memory_mib = 50'000;  // over its 40960 MiB
  controller_->OnSamples(NodeId("gpu01"), {over});
  ASSERT_TRUE(WaitFor([&] { return agent_->process_kills().size() == 1; }));
  clock_.Advance(seconds(5));
  GpuSample within = Reading(0, clock_.Now(), 90, 1'000, job->id);
  within.processes[0].used_memory_mib = 10'000;
  controller_->OnSamples(NodeId("gpu01"), {within});
  ASSERT_TRUE(WaitFor([&] {
    auto events = controller_->JobEvents(alice_, job->id);
    return events.ok() && std::any_of(events->begin(), events->end(), [](const Event& e) {
             return e.kind == "gpu_condition_cleared";
           });
  }));
  clock_.Advance(seconds(60));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(agent_->killed().empty());
  EXPECT_TRUE(StateIs(job->id, JobState::kRunning));
}

TEST_F(ControllerTest, GpuHealthChangesAreRecordedAndPersisted) {
  GpuSample failed = Reading(2, clock_.Now(), 0, 0);
  failed.health = GpuHealth::kFailed;
  failed.health_cause = "XID 79 (GPU has fallen off the bus)";
  controller_->OnSamples(NodeId("gpu01"), {failed});
  auto health_of_gpu2 = [&] {
    auto nodes = controller_->ListNodes(root_);
    return nodes.ok() && !nodes->empty() ? (*nodes)[0].gpus[2].health : GpuHealth::kOk;
  };
  ASSERT_TRUE(WaitFor([&] { return health_of_gpu2() == GpuHealth::kFailed; }));
  auto gpus = controller_->ListGpus(alice_);
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ((*gpus)[2].gpu.health, GpuHealth::kFailed);
  EXPECT_EQ((*gpus)[2].gpu.health_cause, "XID 79 (GPU has fallen off the bus)");

  // A failed GPU takes no work: a 3-GPU job gets the other three.
  auto job = controller_->Submit(alice_, Spec(3));
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  const Job launched = agent_->launched()[0];
  for (const GpuUuid& uuid : launched.allocation->gpus) {
    EXPECT_NE(uuid, GpuUuid("GPU-2"));
  }

  // The stored node keeps the health until the GPU reports again (here: after a restart the
  // agent's hello carries the fresh inventory, which this fake sends as ok).
  controller_.reset();
  auto store = OpenSqliteStore(dir_ / "state.db");
  ASSERT_TRUE(store.ok());
  auto nodes = (*store)->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1U);
  EXPECT_EQ((*nodes)[0].gpus[2].health, GpuHealth::kFailed);
  auto events = (*store)->ListEvents(std::nullopt, 0, 1000);
  ASSERT_TRUE(events.ok());
  int health_events = 0;
  for (const Event& e : *events) {
    if (e.kind == "gpu_health") {
      ++health_events;
      EXPECT_NE(e.message.find("ok -> failed: XID 79"), std::string::npos) << e.message;
    }
  }
  EXPECT_EQ(health_events, 1);
}

// Issue #8: energy from the GPU counter, priced, per job (live and stored) and per team and
// user in `quota`, running jobs included; a restart keeps the ended runs' energy.
TEST_F(ControllerTest, EnergyIsPricedPerJobAndSummedPerTeamAndUser) {
  energy_price_ = EnergyPrice{.price_per_kwh = 0.5, .currency = "USD", .co2_g_per_kwh = 400};
  Boot();
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 4242, clock_.Now());
  const Time t0 = clock_.Now();
  // 1.8e9 mJ = 0.5 kWh between the two readings.
  controller_->OnSamples(NodeId("gpu01"), {Reading(0, t0, 40, 1'000, job->id)});
  controller_->OnSamples(NodeId("gpu01"),
                         {Reading(0, t0 + seconds(1), 80, 1'800'001'000, job->id)});
  ASSERT_TRUE(WaitFor([&] {
    auto usage = Get(job->id).usage;
    return usage && usage->samples == 2;
  }));
  const auto expect_charge = [](const std::optional<EnergyCharge>& charge) {
    ASSERT_TRUE(charge);
    EXPECT_EQ(charge->energy_mj, 1'800'000'000);
    EXPECT_DOUBLE_EQ(charge->kwh, 0.5);
    EXPECT_DOUBLE_EQ(charge->cost.value_or(-1), 0.25);
    EXPECT_EQ(charge->currency, "USD");
    EXPECT_DOUBLE_EQ(charge->co2_kg.value_or(-1), 0.2);
  };
  expect_charge(Get(job->id).energy_charge);
  auto quota = controller_->Quota(alice_);
  ASSERT_TRUE(quota.ok());
  ASSERT_EQ(quota->users.size(), 1U);
  EXPECT_EQ(quota->users[0].energy.energy_mj, 1'800'000'000);  // running: so far
  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));

  Boot();  // the ended run's energy comes back from the store
  expect_charge(Get(job->id).energy_charge);
  quota = controller_->Quota(root_);
  ASSERT_TRUE(quota.ok());
  ASSERT_EQ(quota->users.size(), 1U);
  EXPECT_EQ(quota->users[0].user, "alice");
  expect_charge(quota->users[0].energy);
  bool found = false;
  for (const TeamQuota& team : quota->teams) {
    if (team.team == quota->users[0].team) {
      found = true;
      expect_charge(team.energy);
    }
  }
  EXPECT_TRUE(found);
}

// Issue #8: a GPU fails under a running job. The job gets its checkpoint signal (the GPU still
// answers), goes back to the queue with the cause, and restarts on healthy GPUs only; an
// operator's resume asks the agent to judge the card afresh.
TEST_F(ControllerTest, AJobOnAFailedGpuIsCheckpointedRequeuedAndRestartsElsewhere) {
  JobSpec spec = Spec(2);
  spec.checkpoint_signal = 10;  // SIGUSR1
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  const GpuUuid broken = agent_->launched()[0].allocation->gpus[1];
  const int broken_index = broken == GpuUuid("GPU-1") ? 1 : 0;

  GpuSample failed = Reading(broken_index, clock_.Now(), 0, 0, job->id);
  failed.health = GpuHealth::kFailed;
  failed.health_cause = "XID 48 (double-bit ECC error)";
  controller_->OnSamples(NodeId("gpu01"), {failed});
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->killed()[0].first, job->id);
  EXPECT_EQ(agent_->signals()[0], 10);
  EXPECT_NE(Get(job->id).reason.find("failed: XID 48"), std::string::npos) << Get(job->id).reason;

  controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "saved, exited"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  const Job again = agent_->launched()[1];
  EXPECT_EQ(again.id, job->id);
  for (const GpuUuid& uuid : again.allocation->gpus) {
    EXPECT_NE(uuid, broken);
  }
  auto events = controller_->JobEvents(alice_, job->id);
  ASSERT_TRUE(events.ok());
  std::string history;
  for (const Event& e : *events) {
    history += e.kind + ": " + e.message + "\n";
  }
  EXPECT_NE(history.find("gpu_failover: GPU " + std::to_string(broken_index)), std::string::npos)
      << history;
  EXPECT_NE(history.find("sending SIGUSR1 to checkpoint"), std::string::npos) << history;
  EXPECT_NE(history.find("RUNNING -> NODE_FAIL"), std::string::npos) << history;
  EXPECT_NE(history.find("requeued after GPU failure"), std::string::npos) << history;

  // Users may not resume GPUs; an operator may, and a healthy GPU has nothing to resume.
  const std::string ref = std::to_string(broken_index);
  EXPECT_EQ(controller_->ResumeGpu(alice_, NodeId("gpu01"), ref).error().code,
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(controller_->ResumeGpu(root_, NodeId("gpu01"), "3").error().code,
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(controller_->ResumeGpu(root_, NodeId("gpu01"), "9").error().code, ErrorCode::kNotFound);
  auto resumed = controller_->ResumeGpu(root_, NodeId("gpu01"), broken.value());
  ASSERT_TRUE(resumed.ok()) << resumed.error().ToString();
  EXPECT_EQ(resumed->health, GpuHealth::kFailed);
  ASSERT_TRUE(WaitFor([&] { return agent_->health_resets().size() == 1; }));
  EXPECT_EQ(agent_->health_resets()[0], broken);
}

// A GPU that fell off the bus cannot serve a checkpoint: its job gets SIGTERM, not its
// checkpoint signal. A job that must not run twice ends FAILED instead of being requeued.
// An agent started with --slurm (beside slurmd) must not get this server's launches: its node is
// drained with the fix until an agent of the right kind says hello.
TEST_F(ControllerTest, ASlurmAgentUnderASchedulingServerDrainsItsNode) {
  auto node = [&] {
    return (*controller_->ListNodes(root_))[0];
  };
  AgentHello hello{TestNode(gpus_), {}, {}};
  hello.jobs_from = "slurm";
  controller_->OnAgentHello(hello);
  ASSERT_TRUE(WaitFor([&] { return node().state == NodeState::kDrained; }));
  EXPECT_NE(node().state_reason.find("start the agent without --slurm"), std::string::npos)
      << node().state_reason;
  auto job = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(job.ok());
  controller_->OnAgentHello(AgentHello{TestNode(gpus_), {}, {}});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));  // up again: it runs
}

TEST_F(ControllerTest, ALostGpuStopsItsJobWithoutACheckpoint) {
  JobSpec spec = Spec(1);
  spec.checkpoint_signal = 10;
  spec.requeue = false;
  auto job = controller_->Submit(alice_, spec);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  GpuSample lost;
  lost.uuid = agent_->launched()[0].allocation->gpus[0];
  lost.time = clock_.Now();
  lost.lost = true;
  lost.health = GpuHealth::kFailed;
  lost.health_cause = "GPU fell off the bus (NVML: GPU is lost)";
  controller_->OnSamples(NodeId("gpu01"), {lost});
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->signals()[0], kSigTerm);
  controller_->OnJobExited(JobExitReport{job->id, 143, 15, clock_.Now(), "killed"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kFailed); }));
  EXPECT_NE(Get(job->id).reason.find("not requeued (--no-requeue)"), std::string::npos)
      << Get(job->id).reason;
}

// A degraded GPU (here: too hot) keeps its running job but takes no new one.
TEST_F(ControllerTest, ADegradedGpuTakesNoNewWork) {
  for (int i = 0; i < 4; ++i) {
    GpuSample s = Reading(i, clock_.Now(), 0, 0);
    if (i == 0) {
      s.health = GpuHealth::kDegraded;
      s.health_cause = "temperature 93 C >= 90 C";
    }
    controller_->OnSamples(NodeId("gpu01"), {s});
  }
  ASSERT_TRUE(WaitFor([&] {
    auto nodes = controller_->ListNodes(root_);
    return nodes.ok() && (*nodes)[0].gpus[0].health == GpuHealth::kDegraded;
  }));
  auto three = controller_->Submit(alice_, Spec(3));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  const Job three_started = agent_->launched()[0];
  for (const GpuUuid& uuid : three_started.allocation->gpus) {
    EXPECT_NE(uuid, GpuUuid("GPU-0"));
  }
  auto one_more = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(one_more.ok());
  ASSERT_TRUE(WaitFor([&] { return !Get(one_more->id).reason.empty(); }));
  EXPECT_EQ(Get(one_more->id).state, JobState::kPending);
  EXPECT_TRUE(agent_->killed().empty());
}

// Issue #20: a job ended leaving processes its agent could not stop (they escaped a killed
// shim where no cgroup holds the job). Its GPUs take no new work from the exit on, before any
// sample says so; the agent's samples keep them degraded while the processes live and return
// them once they are gone.
TEST_F(ControllerTest, LeftoverProcessesKeepTheJobsGpusOutOfWorkUntilTheyEnd) {
  auto job = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  JobExitReport exit{job->id, -1, std::nullopt, clock_.Now(), "supervisor process died"};
  exit.leftover_pids = {4242};
  auto next = controller_->Submit(alice_, Spec(1));
  controller_->OnJobExited(exit);
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kFailed); }));
  const std::string cause = LeftoverHoldCause(job->id, {4242});
  auto nodes = controller_->ListNodes(root_);
  ASSERT_TRUE(nodes.ok());
  for (const Gpu& gpu : (*nodes)[0].gpus) {
    EXPECT_EQ(gpu.health, GpuHealth::kDegraded) << gpu.uuid.value();
    EXPECT_EQ(gpu.health_cause, cause);
  }
  ASSERT_TRUE(WaitFor([&] { return !Get(next->id).reason.empty(); }));
  EXPECT_EQ(Get(next->id).state, JobState::kPending);
  EXPECT_EQ(agent_->launched().size(), 1U);

  // The agent's first samples carry the same mark (nothing new to record), later ones ok.
  for (int i = 0; i < 4; ++i) {
    GpuSample s = Reading(i, clock_.Now(), 0, 0);
    s.health = GpuHealth::kDegraded;
    s.health_cause = cause;
    controller_->OnSamples(NodeId("gpu01"), {s});
  }
  clock_.Advance(std::chrono::seconds(1));
  for (int i = 0; i < 4; ++i) {
    controller_->OnSamples(NodeId("gpu01"), {Reading(i, clock_.Now(), 0, 0)});
  }
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, next->id);
  controller_.reset();  // flushes the events
  auto store = OpenSqliteStore(dir_ / "state.db");
  ASSERT_TRUE(store.ok());
  auto events = (*store)->ListEvents(std::nullopt, 0, 1000);
  ASSERT_TRUE(events.ok());
  int marks = 0;
  int returns = 0;
  for (const Event& e : *events) {
    marks += e.kind == "gpu_health" && e.message.ends_with(": ok -> degraded: " + cause) ? 1 : 0;
    returns += e.kind == "gpu_health" && e.message.ends_with(": degraded -> ok") ? 1 : 0;
  }
  EXPECT_EQ(marks, 4) << "one event per GPU, not a second one for the agent's same mark";
  EXPECT_EQ(returns, 4);
}

// Issue #4's case on one full node: a high-priority job preempts low-priority work. The victim
// gets its checkpoint signal, goes back to the queue at its place with the cause shown, and
// runs again once the high job ends.
TEST_F(ControllerTest, HighPriorityPreemptsLowWithItsCheckpointSignal) {
  JobSpec low_spec = Spec(4, PriorityClass::kLow);
  low_spec.checkpoint_signal = 10;  // SIGUSR1
  auto low = controller_->Submit(alice_, low_spec);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(11));  // past the default 10-minute minimum run time

  auto high = controller_->Submit(bob_, Spec(2, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->killed()[0].first, low->id);
  EXPECT_NE(agent_->killed()[0].second.find("high priority beats low"), std::string::npos)
      << agent_->killed()[0].second;
  EXPECT_EQ(agent_->signals()[0], 10);
  // While the victim stops, the high job waits for it, and the victim's owner sees why.
  EXPECT_NE(Get(high->id).reason.find("once these jobs stop"), std::string::npos)
      << Get(high->id).reason;
  EXPECT_NE(Get(low->id).reason.find("high priority beats low"), std::string::npos);
  EXPECT_EQ(agent_->launched().size(), 1U);

  controller_->OnJobExited(JobExitReport{low->id, 0, std::nullopt, clock_.Now(), "USR1, exited"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
  const Job requeued = Get(low->id);
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_FALSE(requeued.allocation);
  EXPECT_FALSE(requeued.start_time);
  EXPECT_EQ(requeued.submit_time, low->submit_time);  // keeps its place in the queue
  EXPECT_NE(requeued.reason.find("requeued after preemption"), std::string::npos)
      << requeued.reason;
  EXPECT_NE(requeued.reason.find("high priority beats low"), std::string::npos);
  auto events = controller_->JobEvents(alice_, low->id);
  ASSERT_TRUE(events.ok());
  std::string history;
  for (const Event& e : *events) {
    history += e.kind + ": " + e.message + "\n";
  }
  EXPECT_NE(history.find("preempt: "), std::string::npos) << history;
  EXPECT_NE(history.find("sending SIGUSR1"), std::string::npos) << history;
  EXPECT_NE(history.find("RUNNING -> PREEMPTED"), std::string::npos) << history;
  EXPECT_NE(history.find("PREEMPTED -> PENDING"), std::string::npos) << history;
  ASSERT_TRUE(WaitFor([&] { return agent_->acked().size() == 1; }));

  controller_->OnJobStarted(high->id, 2, clock_.Now());
  controller_->OnJobExited(JobExitReport{high->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 3; }));
  EXPECT_EQ(agent_->launched()[2].id, low->id);
  controller_->OnJobStarted(low->id, 3, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  EXPECT_EQ(Get(low->id).reason.find("requeued"), std::string::npos) << Get(low->id).reason;
}

TEST_F(ControllerTest, NoPreemptionBeforeTheMinimumRunTime) {
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(9));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  // It says whom it waits for and when: the victim's start + 10m.
  const std::string waiting = "waiting to preempt job " + std::to_string(low->id.value()) +
                              " (low) on gpu01, possible at " +
                              FormatUtcSeconds(clock_.Now() + std::chrono::minutes(1)) +
                              " (minimum run time 10m)";
  ASSERT_TRUE(WaitFor([&] { return Get(high->id).reason == waiting; })) << Get(high->id).reason;
  EXPECT_EQ(Get(high->id).estimated_start, clock_.Now() + std::chrono::minutes(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(agent_->killed().empty());
  // Once the victim has run 10 minutes a pass preempts it, although nothing else happened.
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  EXPECT_EQ(agent_->killed()[0].first, low->id);
  EXPECT_EQ(agent_->signals()[0], 15);  // the default checkpoint signal: SIGTERM
}

TEST_F(ControllerTest, CancellingAJobBeingPreemptedEndsIt) {
  auto low = controller_->Submit(alice_, Spec(4, PriorityClass::kLow));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(11));
  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  ASSERT_TRUE(controller_->CancelJob(alice_, low->id).ok());
  controller_->OnJobExited(JobExitReport{low->id, 143, 15, clock_.Now(), "killed"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kCancelled); }));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
}

// A victim that must not run twice (--no-requeue) is stopped as any victim, then ends CANCELLED
// with the cause (Slurm's PreemptMode=CANCEL) instead of going back to the queue: it never
// starts again, and a job waiting for it to complete is cancelled too.
TEST_F(ControllerTest, APreemptedJobThatMustNotRunTwiceIsCancelled) {
  JobSpec once = Spec(4, PriorityClass::kLow);
  once.requeue = false;
  auto low = controller_->Submit(alice_, once);
  ASSERT_TRUE(low.ok());
  JobSpec after_spec = Spec(1, PriorityClass::kLow);
  after_spec.after = {Dependency{.job = low->id, .kind = DependencyKind::kOk}};
  auto dependent = controller_->Submit(alice_, after_spec);
  ASSERT_TRUE(dependent.ok()) << dependent.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(low->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(11));  // past the minimum run time

  auto high = controller_->Submit(bob_, Spec(4, PriorityClass::kHigh));
  ASSERT_TRUE(WaitFor([&] { return agent_->killed().size() == 1; }));
  controller_->OnJobExited(JobExitReport{low->id, 143, 15, clock_.Now(), "killed by SIGTERM"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(low->id, JobState::kCancelled); }));
  const Job cancelled = Get(low->id);
  EXPECT_NE(cancelled.reason.find("high priority beats low"), std::string::npos)
      << cancelled.reason;
  EXPECT_NE(cancelled.reason.find("not requeued (--no-requeue)"), std::string::npos)
      << cancelled.reason;
  EXPECT_TRUE(cancelled.end_time.has_value());
  auto events = controller_->JobEvents(alice_, low->id);
  ASSERT_TRUE(events.ok());
  std::string history;
  for (const Event& e : *events) {
    history += e.kind + ": " + e.message + "\n";
  }
  EXPECT_NE(history.find("the job then ends CANCELLED (--no-requeue)"), std::string::npos)
      << history;
  EXPECT_NE(history.find("PREEMPTED -> CANCELLED"), std::string::npos) << history;
  EXPECT_EQ(history.find("PREEMPTED -> PENDING"), std::string::npos) << history;
  ASSERT_TRUE(WaitFor([&] { return StateIs(dependent->id, JobState::kCancelled); }));

  // The high job takes the GPUs and ends; the cancelled victim is never launched again.
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, high->id);
  controller_->OnJobStarted(high->id, 2, clock_.Now());
  controller_->OnJobExited(JobExitReport{high->id, 0, std::nullopt, clock_.Now(), "exited"});
  ASSERT_TRUE(WaitFor([&] { return StateIs(high->id, JobState::kCompleted); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a few more passes
  EXPECT_EQ(agent_->launched().size(), 2U);
  EXPECT_EQ(Get(low->id).state, JobState::kCancelled);
}

// Issue #20: a job name reaches root's `queue`, the event log and e-mail subjects. One given
// explicitly with a control character is refused; the default one, from argv[0] (any bytes),
// is escaped.
TEST_F(ControllerTest, JobNamesCarryNoControlCharacters) {
  JobSpec named = Spec(1);
  named.name = "eval\x1b[2J";
  auto refused = controller_->Submit(alice_, named);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message.rfind("name: byte 4 (\\x1b)", 0), 0U)
      << refused.error().message;

  JobSpec unnamed = Spec(1);
  unnamed.argv = {"/tmp/x\x1b]0;owned\x07", "--fast"};
  auto job = controller_->Submit(alice_, unnamed);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->spec.name, "x\\x1b]0;owned\\x07");
  EXPECT_EQ(job->spec.argv[0], "/tmp/x\x1b]0;owned\x07");  // what runs is what was asked
  auto events = controller_->JobEvents(alice_, job->id);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->front().message.find('\x1b'), std::string::npos) << events->front().message;
}

// A job that names no team is charged to its user's team. A team is never a free label (issue
// #20: each name becomes /metrics series): one that only lists members is known, an invented
// one is refused, and with no team configured at all `--team` is refused.
TEST_F(ControllerTest, JobWithoutTeamGoesToItsUsersTeam) {
  team_of_user_ = {{"alice", "ml"}};
  Boot();
  auto defaulted = controller_->Submit(alice_, Spec(1));
  JobSpec named = Spec(1);
  named.team = "ml";
  auto explicit_team = controller_->Submit(alice_, named);
  auto other = controller_->Submit(bob_, Spec(1));
  ASSERT_TRUE(defaulted.ok() && explicit_team.ok() && other.ok());
  EXPECT_EQ(defaulted->spec.team, "ml");
  EXPECT_EQ(explicit_team->spec.team, "ml");
  EXPECT_EQ(other->spec.team, "");  // bob is in no team: the default one
  named.team = "vision";
  auto invented = controller_->Submit(alice_, named);
  ASSERT_FALSE(invented.ok());
  EXPECT_EQ(invented.error().message, "team: unknown team 'vision'; known teams: ml");
}

TEST_F(ControllerTest, NoTeamConfiguredRefusesAnyTeamName) {
  Boot();
  JobSpec named = Spec(1);
  named.team = "vision";
  for (const Caller& caller : {alice_, root_}) {
    auto refused = controller_->Submit(caller, named);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(refused.error().message.rfind("team: no teams are configured on this server", 0), 0U)
        << refused.error().message;
  }
  auto unnamed = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(unnamed.ok()) << unnamed.error().ToString();
  EXPECT_EQ(unnamed->spec.team, "");
}

// Issue #6: an arrival or an end alone is decided incrementally, at a cost that does not grow
// with the queue; a full pass follows within full_pass_interval (1 s) of one that left jobs
// waiting, to refresh the rest.
TEST_F(ControllerTest, ArrivalsAndEndsAreDecidedIncrementallyAndAFullPassFollows) {
  auto passes = [&](std::string_view kind) -> std::int64_t {
    auto stats = controller_->Stats(root_);
    for (const PassStats& p : stats->passes) {
      if (p.kind == kind) {
        return p.count;
      }
    }
    return -1;
  };
  auto a = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(a->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(a->id, JobState::kRunning); }));
  // a started at once: its incremental pass left nothing waiting, so no full pass is owed
  // (lifecycle/pass_planner.h); a turn 2 s later (a command's: Stats reads the view and starts
  // none) runs none.
  const std::int64_t full = passes("full");
  const std::int64_t incremental = passes("incremental");
  clock_.Advance(seconds(2));
  (void)controller_->ExplainJob(root_, a->id);
  EXPECT_EQ(passes("full"), full);

  // Each submission's own turn decided it: the cluster is full, so both wait.
  auto b = controller_->Submit(alice_, Spec(2));
  auto c = controller_->Submit(alice_, Spec(1));  // same user: in submit order
  ASSERT_TRUE(b.ok() && c.ok());
  EXPECT_EQ(Get(b->id).state, JobState::kPending);
  EXPECT_EQ(Get(b->id).reason, "needs 2 GPUs; 0 free");
  ASSERT_TRUE(Get(b->id).pending_reason.has_value());  // the same reason, as a value
  EXPECT_EQ(Get(b->id).pending_reason->code, PendingCode::kNoFreeGpus);
  EXPECT_EQ(Get(b->id).pending_reason->text, "needs 2 GPUs; 0 free");
  EXPECT_EQ(Get(c->id).state, JobState::kPending);
  EXPECT_EQ(passes("incremental"), incremental + 2);

  // The end of a frees its GPUs: b and c start on them, decided as one more event.
  controller_->OnJobExited(JobExitReport{a->id, 0, std::nullopt, clock_.Now(), "exited with 0"});
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 3; }));
  EXPECT_EQ(Get(b->id).state, JobState::kStarting);
  EXPECT_EQ(Get(c->id).state, JobState::kStarting);
  EXPECT_EQ(passes("incremental"), incremental + 3);
  EXPECT_EQ(passes("full"), full);

  // full_pass_interval after the first incremental pass that left jobs waiting (b's)
  clock_.Advance(seconds(1));
  ASSERT_TRUE(WaitFor([&] { return passes("full") == full + 1; }));
  EXPECT_EQ(passes("incremental"), incremental + 3);
}

TEST_F(ControllerTest, StatsCountJobsQueueAndTeams) {
  auto a = controller_->Submit(alice_, Spec(4));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  auto b = controller_->Submit(bob_, Spec(1, PriorityClass::kHigh));
  ASSERT_TRUE(a.ok() && b.ok());
  clock_.Advance(seconds(30));
  controller_->OnJobStarted(a->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(a->id, JobState::kRunning); }));
  clock_.Advance(seconds(10));

  auto stats = controller_->Stats(Caller{});
  ASSERT_TRUE(stats.ok()) << stats.error().ToString();
  auto count = [&](std::string_view state) {
    for (const auto& [name, n] : stats->jobs_by_state) {
      if (name == state) {
        return n;
      }
    }
    return -1;
  };
  EXPECT_EQ(count("RUNNING"), 1);
  EXPECT_EQ(count("PENDING"), 1);
  EXPECT_EQ(count("COMPLETED"), 0);
  EXPECT_EQ(stats->gpus, 4);
  EXPECT_EQ(stats->gpus_allocated, 4);
  ASSERT_EQ(stats->queue.size(), 3U);
  EXPECT_EQ(stats->queue[0].priority, "high");
  EXPECT_EQ(stats->queue[0].pending, 1);
  EXPECT_DOUBLE_EQ(stats->queue[0].oldest_wait_seconds, 40);
  EXPECT_EQ(stats->wait_count, 1);  // a started at once
  ASSERT_EQ(stats->teams.size(), 1U);
  EXPECT_EQ(stats->teams[0].team, "default");
  EXPECT_EQ(stats->teams[0].allocated_gpus, 4);
  EXPECT_EQ(stats->teams[0].pending_jobs, 1);
  // Started at t=30 (OnJobStarted), now t=40: 10 s x 4 GPUs.
  EXPECT_DOUBLE_EQ(stats->teams[0].gpu_seconds_total, 40);
}

// ---- accounting: budgets, approval, checkpoints, quota (accounting.h) ----------------------

class ControllerAccountingTest : public ControllerTest {
 protected:
  // Team cv (alice's) with a 1 GPU-hour budget under `over`; bob is in team nlp, no budget.
  void BootWithBudget(OverBudget over) {
    policy_.teams = {TeamPolicy{.name = "cv",
                                .guaranteed_gpus = 4,
                                .max_gpus = 4,
                                .gpu_hour_budget = 1.0,
                                .over_budget = over},
                     TeamPolicy{.name = "nlp", .guaranteed_gpus = 0}};
    team_of_user_ = {{"alice", "cv"}, {"bob", "nlp"}};
    Boot();
  }
  // Runs a 1-GPU job of alice's for two hours: twice cv's budget.
  JobId UseTwoGpuHours() {
    auto job = controller_->Submit(alice_, Spec(1));
    EXPECT_TRUE(job.ok());
    EXPECT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
    controller_->OnJobStarted(job->id, 1, clock_.Now());
    EXPECT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
    clock_.Advance(std::chrono::hours(2));
    controller_->OnJobExited(JobExitReport{job->id, 0, std::nullopt, clock_.Now(), "exited"});
    EXPECT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kCompleted); }));
    return job->id;
  }
  const TeamQuota* FindTeam(const QuotaReport& report, const std::string& name) {
    for (const TeamQuota& team : report.teams) {
      if (team.team == name) {
        return &team;
      }
    }
    return nullptr;
  }
};

// Issue #20: naming a team is charging it. With teams configured a user names only their own
// team (a member of cv running 4 GPUs as nlp would escape cv's max_gpus and budget); an admin
// may name any configured team; an unknown team is refused, listing the known ones.
TEST_F(ControllerAccountingTest, AUserMayChargeOnlyTheirOwnTeam) {
  BootWithBudget(OverBudget::kHold);
  JobSpec as_nlp = Spec(4);
  as_nlp.team = "nlp";
  auto refused = controller_->Submit(alice_, as_nlp);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(refused.error().message,
            "team: only members of team nlp and admins may charge jobs to it; alice is in team "
            "cv: leave --team out or name cv, or ask an admin to make alice a member ([team.nlp] "
            "members in the server's settings)");
  auto array = controller_->SubmitArray(
      alice_, as_nlp, ArrayRequest{.indices = {0, 1}, .max_running = std::nullopt});
  ASSERT_FALSE(array.ok());  // arrays and gangs go through the same check
  EXPECT_EQ(array.error().code, ErrorCode::kPermissionDenied);
  const Caller carol = TestCaller(1002, "carol");  // in no team
  JobSpec as_cv = Spec(1);
  as_cv.team = "cv";
  auto no_team = controller_->Submit(carol, as_cv);
  ASSERT_FALSE(no_team.ok());
  EXPECT_NE(no_team.error().message.find("carol is in no team: leave --team out"),
            std::string::npos)
      << no_team.error().message;
  // Budgets are an admin's: an operator names only their own team too.
  auto by_operator = controller_->Submit(TokenCaller(1003, "olga", Role::kOperator), as_nlp);
  ASSERT_FALSE(by_operator.ok());
  EXPECT_EQ(by_operator.error().code, ErrorCode::kPermissionDenied);

  auto own = controller_->Submit(alice_, as_cv);
  auto by_root = controller_->Submit(root_, as_nlp);
  auto by_admin = controller_->Submit(TokenCaller(1004, "ada", Role::kAdmin), as_nlp);
  auto defaulted = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(own.ok()) << own.error().ToString();
  ASSERT_TRUE(by_root.ok()) << by_root.error().ToString();
  ASSERT_TRUE(by_admin.ok()) << by_admin.error().ToString();
  ASSERT_TRUE(defaulted.ok()) << defaulted.error().ToString();
  EXPECT_EQ(own->spec.team, "cv");
  EXPECT_EQ(by_root->spec.team, "nlp");
  EXPECT_EQ(defaulted->spec.team, "cv");  // no --team: the user's team
  auto jobs = controller_->ListJobs(root_, JobFilter{});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 4U);  // nothing refused was queued
}

TEST_F(ControllerAccountingTest, AnUnknownTeamIsRefusedListingTheKnownOnes) {
  BootWithBudget(OverBudget::kHold);
  JobSpec spec = Spec(1);
  spec.team = "nosuch";
  for (const Caller& caller : {alice_, root_}) {  // not even an admin invents a team
    auto refused = controller_->Submit(caller, spec);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(refused.error().message, "team: unknown team 'nosuch'; known teams: cv, nlp");
  }
}

TEST_F(ControllerAccountingTest, OverBudgetHoldWaitsUntilRootApproves) {
  BootWithBudget(OverBudget::kHold);
  UseTwoGpuHours();
  auto held = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(WaitFor([&] {
    return Get(held->id).reason.find("over its GPU-hour budget") != std::string::npos;
  })) << Get(held->id).reason;
  EXPECT_EQ(agent_->launched().size(), 1U);

  auto by_owner = controller_->ApproveJob(alice_, held->id);
  ASSERT_FALSE(by_owner.ok());
  EXPECT_EQ(by_owner.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(by_owner.error().message.find("only an admin"), std::string::npos);

  auto approved = controller_->ApproveJob(root_, held->id);
  ASSERT_TRUE(approved.ok()) << approved.error().ToString();
  EXPECT_TRUE(approved->budget_approved);
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, held->id);
  EXPECT_FALSE(agent_->launched()[1].preemptible);  // approved: as if within the budget

  auto again = controller_->ApproveJob(root_, held->id);  // now STARTING
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(again.error().message.find("STARTING"), std::string::npos) << again.error().message;
  auto events = controller_->JobEvents(root_, held->id);
  ASSERT_TRUE(events.ok());
  bool recorded = false;
  for (const Event& e : *events) {
    recorded = recorded || (e.kind == "approve" && e.actor == "root");
  }
  EXPECT_TRUE(recorded);
}

TEST_F(ControllerAccountingTest, OverBudgetBorrowOnlyStartsPreemptible) {
  BootWithBudget(OverBudget::kBorrowOnly);
  UseTwoGpuHours();
  auto next = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_EQ(agent_->launched()[1].id, next->id);
  EXPECT_TRUE(agent_->launched()[1].preemptible);
}

// Usage is stored per run: after a restart the budget still counts it, and the quota report
// shows it; a user sees their own teams and rows only.
TEST_F(ControllerAccountingTest, UsageSurvivesARestartAndQuotaShowsIt) {
  BootWithBudget(OverBudget::kHold);
  UseTwoGpuHours();
  Boot();
  auto held = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] {
    return Get(held->id).reason.find("over its GPU-hour budget") != std::string::npos;
  })) << Get(held->id).reason;

  auto report = controller_->Quota(root_);
  ASSERT_TRUE(report.ok()) << report.error().ToString();
  EXPECT_TRUE(report->quotas_on);
  EXPECT_EQ(report->period_start, MonthOf(clock_.Now()).start);
  const TeamQuota* cv = FindTeam(*report, "cv");
  ASSERT_NE(cv, nullptr);
  EXPECT_EQ(cv->guaranteed_gpus, 4);
  EXPECT_EQ(cv->max_gpus, 4);
  EXPECT_NEAR(cv->used_gpu_hours, 2, 1e-9);
  EXPECT_EQ(cv->budget_gpu_hours, 1.0);
  EXPECT_EQ(cv->left_gpu_hours, 0.0);
  EXPECT_EQ(cv->over_budget, "hold");
  EXPECT_TRUE(cv->out_of_budget);
  ASSERT_NE(FindTeam(*report, "nlp"), nullptr);
  ASSERT_EQ(report->users.size(), 1U);
  EXPECT_EQ(report->users[0].user, "alice");

  auto bobs = controller_->Quota(bob_);
  ASSERT_TRUE(bobs.ok());
  EXPECT_EQ(FindTeam(*bobs, "cv"), nullptr);  // not his team
  ASSERT_NE(FindTeam(*bobs, "nlp"), nullptr);
  EXPECT_TRUE(bobs->users.empty());
}

TEST_F(ControllerAccountingTest, RunningJobsCountTowardsTheBudgetAndShowAsHeld) {
  BootWithBudget(OverBudget::kHold);
  auto job = controller_->Submit(alice_, Spec(2));
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(45));  // 1.5 GPU-hours so far, not ended
  auto report = controller_->Quota(alice_);
  ASSERT_TRUE(report.ok());
  const TeamQuota* cv = FindTeam(*report, "cv");
  ASSERT_NE(cv, nullptr);
  EXPECT_NEAR(cv->used_gpu_hours, 1.5, 1e-9);
  EXPECT_EQ(cv->held_milli, 2000);
  EXPECT_EQ(cv->borrowed_milli, 0);
  auto next = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] {
    return Get(next->id).reason.find("over its GPU-hour budget") != std::string::npos;
  })) << Get(next->id).reason;
}

TEST_F(ControllerAccountingTest, CheckpointIsRecordedByTheOwnerOfARunningJob) {
  auto job = controller_->Submit(alice_, Spec(4));
  auto waiting = controller_->Submit(alice_, Spec(1));  // no GPU left: stays pending
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  auto pending = controller_->CheckpointJob(alice_, waiting->id);
  ASSERT_FALSE(pending.ok());
  EXPECT_EQ(pending.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(pending.error().message.find("PENDING"), std::string::npos);
  controller_->OnJobStarted(job->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(5));

  auto other = controller_->CheckpointJob(bob_, job->id);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kNotFound);  // not his: does not exist for him
  auto saved = controller_->CheckpointJob(alice_, job->id);
  ASSERT_TRUE(saved.ok()) << saved.error().ToString();
  EXPECT_EQ(saved->last_checkpoint, clock_.Now());

  Boot({job->id});  // stored: a restart keeps it
  EXPECT_EQ(Get(job->id).last_checkpoint, clock_.Now());
}

// ---- dependencies and job arrays (dependencies.h, job_arrays.h) ----

JobSpec After(int gpus, std::vector<Dependency> after) {
  JobSpec s = Spec(gpus);
  s.after = std::move(after);
  return s;
}
Dependency AnyEnd(JobId job) {
  return Dependency{.job = job, .kind = DependencyKind::kAny};
}
Dependency OkEnd(JobId job) {
  return Dependency{.job = job, .kind = DependencyKind::kOk};
}

class ControllerDepsTest : public ControllerTest {
 protected:
  bool Launched(JobId id) {
    for (const Job& job : agent_->launched()) {
      if (job.id == id) {
        return true;
      }
    }
    return false;
  }
  // Plays the agent: the job starts and exits with `code`.
  void RunAndExit(JobId id, int code) {
    ASSERT_TRUE(WaitFor([&] { return Launched(id); })) << Get(id).reason;
    controller_->OnJobStarted(id, 1, clock_.Now());
    controller_->OnJobExited(
        JobExitReport{id, code, std::nullopt, clock_.Now(), "exited with " + std::to_string(code)});
    ASSERT_TRUE(WaitFor([&] { return IsTerminal(Get(id).state); }));
  }
  bool HasEvent(JobId id, const std::string& text) {
    auto events = controller_->JobEvents(root_, id);
    for (const Event& e : events.ok() ? *events : std::vector<Event>{}) {
      if (e.message.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
};

TEST_F(ControllerDepsTest, AfterWaitsUntilTheJobEndsInAnyWay) {
  auto a = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return Launched(a->id); }));
  auto b = controller_->Submit(alice_, After(1, {AnyEnd(a->id)}));
  ASSERT_TRUE(b.ok()) << b.error().message;
  const std::string waiting = "waiting for job " + std::to_string(a->id.value()) + " to end";
  ASSERT_TRUE(WaitFor([&] { return Get(b->id).reason == waiting; })) << Get(b->id).reason;
  ASSERT_TRUE(Get(b->id).pending_reason.has_value());
  EXPECT_EQ(Get(b->id).pending_reason->code, PendingCode::kDependency);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(Launched(b->id));  // 3 GPUs free, but it waits
  RunAndExit(a->id, 1);           // a failure ends it too
  ASSERT_TRUE(WaitFor([&] { return Launched(b->id); }));
}

TEST_F(ControllerDepsTest, FailedOkDependencyCancelsAndCascades) {
  auto a = controller_->Submit(alice_, Spec(1));
  auto b = controller_->Submit(alice_, After(1, {OkEnd(a->id)}));
  auto c = controller_->Submit(alice_, After(1, {OkEnd(b->id)}));
  auto d = controller_->Submit(alice_, After(1, {AnyEnd(b->id)}));
  ASSERT_TRUE(c.ok() && d.ok());
  ASSERT_TRUE(WaitFor([&] {
    return Get(b->id).reason ==
           "waiting for job " + std::to_string(a->id.value()) + " to complete successfully";
  })) << Get(b->id).reason;
  RunAndExit(a->id, 1);
  const std::string a_failed =
      "dependency job " + std::to_string(a->id.value()) + " failed (exit 1)";
  ASSERT_TRUE(WaitFor([&] { return StateIs(c->id, JobState::kCancelled); }));
  EXPECT_EQ(Get(b->id).state, JobState::kCancelled);
  EXPECT_EQ(Get(b->id).reason, a_failed);
  EXPECT_FALSE(Get(b->id).pending_reason.has_value());  // it described the wait, now over
  EXPECT_EQ(Get(c->id).reason,
            "dependency job " + std::to_string(b->id.value()) + " was cancelled");
  EXPECT_TRUE(HasEvent(b->id, "PENDING -> CANCELLED: " + a_failed));
  // D waited for B to end in any way: B's cancellation lets it run.
  ASSERT_TRUE(WaitFor([&] { return Launched(d->id); }));
}

TEST_F(ControllerDepsTest, SuccessfulOkDependencyLetsTheJobRun) {
  auto a = controller_->Submit(alice_, Spec(1));
  auto b = controller_->Submit(alice_, After(1, {OkEnd(a->id)}));
  RunAndExit(a->id, 0);
  ASSERT_TRUE(WaitFor([&] { return Launched(b->id); }));
}

TEST_F(ControllerDepsTest, AfterMustNameAVisibleJob) {
  auto missing = controller_->Submit(alice_, After(1, {AnyEnd(JobId(99))}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(missing.error().message.rfind("after: job 99 does not exist; give the id of a job you "
                                          "submitted",
                                          0),
            0u)
      << missing.error().message;
  auto bobs = controller_->Submit(bob_, Spec(1));
  auto other = controller_->Submit(alice_, After(1, {AnyEnd(bobs->id)}));
  ASSERT_FALSE(other.ok());  // bob's job does not exist for alice
  EXPECT_NE(other.error().message.find("does not exist"), std::string::npos);
  EXPECT_TRUE(controller_->Submit(root_, After(1, {AnyEnd(bobs->id)})).ok());
  auto twice = controller_->Submit(bob_, After(1, {AnyEnd(bobs->id), OkEnd(bobs->id)}));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("given twice"), std::string::npos);
}

TEST_F(ControllerDepsTest, DependencyOnAnEndedJobIsJudgedAtOnce) {
  auto a = controller_->Submit(alice_, Spec(1));
  RunAndExit(a->id, 2);
  auto ok = controller_->Submit(alice_, After(1, {OkEnd(a->id)}));
  ASSERT_FALSE(ok.ok());
  EXPECT_NE(ok.error().message.find("already ended FAILED (exit 2)"), std::string::npos)
      << ok.error().message;
  auto any = controller_->Submit(alice_, After(1, {AnyEnd(a->id)}));
  ASSERT_TRUE(any.ok());
  ASSERT_TRUE(WaitFor([&] { return Launched(any->id); }));
}

TEST_F(ControllerDepsTest, CancellingAWaitingJobForgetsIt) {
  auto a = controller_->Submit(alice_, Spec(1));
  auto b = controller_->Submit(alice_, After(1, {OkEnd(a->id)}));
  ASSERT_TRUE(controller_->CancelJob(alice_, b->id).ok());
  RunAndExit(a->id, 1);
  EXPECT_NE(Get(b->id).reason.find("cancelled by alice"), std::string::npos) << Get(b->id).reason;
}

TEST_F(ControllerDepsTest, ArrayTasksGetConsecutiveIdsAndAThrottle) {
  auto tasks = controller_->SubmitArray(
      alice_, Spec(1), ArrayRequest{.indices = {0, 1, 2, 3, 4, 5}, .max_running = 2});
  ASSERT_TRUE(tasks.ok()) << tasks.error().message;
  ASSERT_EQ(tasks->size(), 6u);
  const JobId first = (*tasks)[0].id;
  for (std::size_t i = 0; i < tasks->size(); ++i) {
    EXPECT_EQ((*tasks)[i].id, JobId(first.value() + static_cast<std::int64_t>(i)));
    ASSERT_TRUE((*tasks)[i].spec.array);
    EXPECT_EQ((*tasks)[i].spec.array->array_job, first);
    EXPECT_EQ((*tasks)[i].spec.array->index, static_cast<int>(i));
  }
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  EXPECT_TRUE(Launched((*tasks)[0].id));  // lowest indices first
  EXPECT_TRUE(Launched((*tasks)[1].id));
  const std::string limit = "array " + std::to_string(first.value()) + ": 2 tasks running, limit 2";
  ASSERT_TRUE(WaitFor([&] { return Get((*tasks)[2].id).reason == limit; }))
      << Get((*tasks)[2].id).reason;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(agent_->launched().size(), 2u);  // 4 GPUs, but the array's limit is 2
  RunAndExit((*tasks)[0].id, 0);
  ASSERT_TRUE(WaitFor([&] { return Launched((*tasks)[2].id); }));
  EXPECT_EQ(agent_->launched().size(), 3u);
}

// As Slurm's afterok:ARRAY: a dependency on an array's id waits for every task, and is broken
// by any task that fails; a later task's own id still names that task alone.
TEST_F(ControllerDepsTest, AfterAnArrayWaitsForEveryTask) {
  auto tasks = controller_->SubmitArray(
      alice_, Spec(1), ArrayRequest{.indices = {0, 1, 2}, .max_running = std::nullopt});
  ASSERT_TRUE(tasks.ok()) << tasks.error().message;
  const JobId array = (*tasks)[0].id;
  auto all_ok = controller_->Submit(alice_, After(1, {OkEnd(array)}));
  auto all_end = controller_->Submit(alice_, After(1, {AnyEnd(array)}));
  auto task1 = controller_->Submit(alice_, After(1, {OkEnd((*tasks)[1].id)}));
  ASSERT_TRUE(all_ok.ok() && all_end.ok() && task1.ok());
  RunAndExit(array, 0);  // the first task's end is not the array's
  RunAndExit((*tasks)[1].id, 0);
  ASSERT_TRUE(WaitFor([&] { return Launched(task1->id); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(Launched(all_ok->id));
  EXPECT_FALSE(Launched(all_end->id));
  RunAndExit((*tasks)[2].id, 3);
  ASSERT_TRUE(WaitFor([&] { return StateIs(all_ok->id, JobState::kCancelled); }));
  EXPECT_EQ(Get(all_ok->id).reason,
            "dependency job " + std::to_string(array.value()) + " failed (exit 3)");
  ASSERT_TRUE(WaitFor([&] { return Launched(all_end->id); }));
  // Once the array has ended, a new dependency on it is judged at once.
  auto late = controller_->Submit(alice_, After(1, {OkEnd(array)}));
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.error().message.find("already ended FAILED (exit 3)"), std::string::npos)
      << late.error().message;
}

TEST_F(ControllerDepsTest, ArrayRequestsAreChecked) {
  auto empty = controller_->SubmitArray(
      alice_, Spec(1), ArrayRequest{.indices = {}, .max_running = std::nullopt});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, ErrorCode::kInvalidArgument);
  auto infeasible = controller_->SubmitArray(
      alice_, Spec(8), ArrayRequest{.indices = {0, 1}, .max_running = std::nullopt});
  ASSERT_FALSE(infeasible.ok());  // no task is created when the spec is refused
  EXPECT_TRUE(controller_->ListJobs(alice_, JobFilter{})->empty());
}

// A multi-job submission (POST /api/v1/jobs {"jobs": [...]}) is one request, answered after
// the one commit that holds all its jobs; their ids follow the order sent; they survive a
// restart.
TEST_F(ControllerDepsTest, ABatchIsQueuedWholeInOrderByOneRequest) {
  const ClusterStats before = *controller_->Stats(root_);
  JobSpec named = Spec(1);
  named.name = "third";
  auto jobs = controller_->SubmitBatch(alice_, {Spec(4), Spec(2), named, Spec(4)});
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 4u);
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*jobs)[i].id, JobId((*jobs)[0].id.value() + static_cast<std::int64_t>(i)));
    EXPECT_EQ((*jobs)[i].state, JobState::kPending);
    EXPECT_EQ((*jobs)[i].owner.user, "alice");
  }
  EXPECT_EQ((*jobs)[1].spec.request.gpus, 2);
  EXPECT_EQ((*jobs)[2].spec.name, "third");
  EXPECT_FALSE((*jobs)[0].spec.priority.name.empty());  // the default class, as for Submit
  const ClusterStats after = *controller_->Stats(root_);
  EXPECT_EQ(after.committed_requests - before.committed_requests, 1);
  EXPECT_GE(after.commits - before.commits, 1);
  Boot();
  for (const Job& job : *jobs) {
    EXPECT_EQ(Get(job.id).spec.name, job.spec.name);
  }
}

// All or none: one refused spec refuses the batch, naming its index; no job is created.
TEST_F(ControllerDepsTest, ABatchWithARefusedSpecCreatesNoJobAndNamesTheSpec) {
  JobSpec no_workdir = Spec(1);
  no_workdir.workdir = "relative/dir";
  for (const auto& [bad, index] : {std::pair{Spec(8), "jobs[1]: "},  // more GPUs than any node
                                   std::pair{no_workdir, "jobs[1]: "}}) {
    auto refused = controller_->SubmitBatch(alice_, {Spec(1), bad, Spec(1)});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(refused.error().message.rfind(index, 0), 0u) << refused.error().message;
  }
  auto empty = controller_->SubmitBatch(alice_, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message.rfind("jobs: an empty list", 0), 0u) << empty.error().message;
  auto oversized = controller_->SubmitBatch(
      alice_, std::vector<JobSpec>(static_cast<std::size_t>(kMaxBatchJobs) + 1, Spec(1)));
  ASSERT_FALSE(oversized.ok());
  EXPECT_NE(oversized.error().message.find("at most 10000"), std::string::npos)
      << oversized.error().message;
  JobFilter all;
  all.include_finished = true;
  EXPECT_TRUE(controller_->ListJobs(alice_, all)->empty());
  // The ids the refused batches did not use are not skipped.
  auto next = controller_->SubmitBatch(alice_, {Spec(1)});
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->front().id, JobId(1));
}

// An array is one request and one commit too, however many tasks.
TEST_F(ControllerDepsTest, AnArrayIsOneRequestSharingOneCommit) {
  const ClusterStats before = *controller_->Stats(root_);
  auto tasks = controller_->SubmitArray(
      alice_, Spec(4), ArrayRequest{.indices = {0, 1, 2, 3, 4, 5, 6, 7}, .max_running = {}});
  ASSERT_TRUE(tasks.ok()) << tasks.error().message;
  const ClusterStats after = *controller_->Stats(root_);
  EXPECT_EQ(after.committed_requests - before.committed_requests, 1);
  Boot();
  EXPECT_EQ(Get(tasks->back().id).spec.array->index, 7);
}

TEST_F(ControllerDepsTest, CancelArrayCancelsEveryUnfinishedTask) {
  auto tasks = controller_->SubmitArray(
      alice_, Spec(1), ArrayRequest{.indices = {0, 1, 2}, .max_running = 1});
  const JobId first = (*tasks)[0].id;
  RunAndExit(first, 0);
  EXPECT_EQ(controller_->CancelArray(bob_, first).error().code, ErrorCode::kNotFound);
  auto not_first = controller_->CancelArray(alice_, (*tasks)[1].id);
  ASSERT_FALSE(not_first.ok());
  EXPECT_NE(
      not_first.error().message.find("gpufleet cancel --array " + std::to_string(first.value())),
      std::string::npos)
      << not_first.error().message;
  auto cancelled = controller_->CancelArray(alice_, first);
  ASSERT_TRUE(cancelled.ok()) << cancelled.error().message;
  EXPECT_EQ(cancelled->size(), 2u);  // task 0 had already ended
  // Task 1 may have started (limit 1, task 0 ended): it ends once its kill is acknowledged.
  if (Launched((*tasks)[1].id)) {
    controller_->OnJobExited(JobExitReport{(*tasks)[1].id, 143, 15, clock_.Now(), "killed"});
  }
  ASSERT_TRUE(WaitFor([&] { return StateIs((*tasks)[1].id, JobState::kCancelled); }));
  EXPECT_EQ(Get((*tasks)[2].id).state, JobState::kCancelled);
  auto plain = controller_->Submit(alice_, Spec(1));
  EXPECT_EQ(controller_->CancelArray(alice_, plain->id).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(controller_->CancelArray(alice_, first).error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(ControllerDepsTest, DependenciesSurviveARestart) {
  auto a = controller_->Submit(alice_, Spec(1));
  ASSERT_TRUE(WaitFor([&] { return Launched(a->id); }));
  controller_->OnJobStarted(a->id, 1, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return StateIs(a->id, JobState::kRunning); }));
  auto b = controller_->Submit(alice_, After(1, {OkEnd(a->id)}));
  auto c = controller_->Submit(alice_, After(1, {AnyEnd(a->id)}));
  // gpufleet restarts; job a ended with exit 3 while nobody watched.
  Boot({}, {JobExitReport{a->id, 3, std::nullopt, clock_.Now(), "exited with 3"}});
  ASSERT_TRUE(WaitFor([&] { return StateIs(b->id, JobState::kCancelled); })) << Get(b->id).reason;
  EXPECT_EQ(Get(b->id).reason,
            "dependency job " + std::to_string(a->id.value()) + " failed (exit 3)");
  ASSERT_TRUE(WaitFor([&] { return Launched(c->id); }));
}

// The monthly report (read_side_report.cpp) reads the stored runs and the running ones; who sees
// what.
TEST_F(ControllerAccountingTest, MonthlyReportFromTheStoreByPermission) {
  BootWithBudget(OverBudget::kHold);
  UseTwoGpuHours();
  auto bobs = controller_->Submit(bob_, Spec(1));
  ASSERT_TRUE(bobs.ok());
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 2; }));
  const Time started = clock_.Now();
  controller_->OnJobStarted(bobs->id, 2, started);
  ASSERT_TRUE(WaitFor([&] { return StateIs(bobs->id, JobState::kRunning); }));
  clock_.Advance(std::chrono::minutes(30));  // still running: half a GPU-hour so far ...
  const std::string month = MonthLabel(clock_.Now());
  // ... of which the report counts up to the start of the current minute.
  const double running_hours = std::chrono::duration<double>(
                                   std::chrono::floor<std::chrono::minutes>(clock_.Now()) - started)
                                   .count() /
                               3600;

  auto all = controller_->MonthlyReport(root_, ReportRequest{.period = month});
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  EXPECT_TRUE(all->all_teams);
  EXPECT_EQ(all->cluster.gpus, 4);
  ASSERT_EQ(all->teams.size(), 2U);
  EXPECT_EQ(all->teams[0].team, "cv");
  EXPECT_NEAR(all->teams[0].usage.gpu_hours_allocated, 2, 1e-9);
  ASSERT_TRUE(all->teams[0].budget_used_pct);
  EXPECT_NEAR(*all->teams[0].budget_used_pct, 200, 1e-6);
  EXPECT_EQ(all->teams[1].team, "nlp");
  EXPECT_NEAR(all->teams[1].usage.gpu_hours_allocated, running_hours, 1e-9);  // the running job
  ASSERT_EQ(all->users.size(), 2U);
  ASSERT_EQ(all->queue.size(), 1U);  // both waited 0 s in class normal
  EXPECT_EQ(all->queue[0].runs, 2);
  bool over_budget = false;
  for (const Recommendation& rec : all->recommendations) {
    over_budget = over_budget || (rec.kind == "over_budget" && rec.subject == "team cv");
  }
  EXPECT_TRUE(over_budget);

  auto mine = controller_->MonthlyReport(bob_, ReportRequest{.period = month});
  ASSERT_TRUE(mine.ok());
  EXPECT_FALSE(mine->all_teams);
  ASSERT_EQ(mine->teams.size(), 1U);
  EXPECT_EQ(mine->teams[0].team, "nlp");
  ASSERT_EQ(mine->users.size(), 1U);
  EXPECT_EQ(mine->users[0].user, "bob");

  auto other = controller_->MonthlyReport(bob_, ReportRequest{.period = month, .team = "cv"});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(other.error().message.find("'cv' is not one of your teams (nlp)"), std::string::npos)
      << other.error().message;
  auto cv = controller_->MonthlyReport(root_, ReportRequest{.period = month, .team = "cv"});
  ASSERT_TRUE(cv.ok());
  ASSERT_EQ(cv->teams.size(), 1U);
  EXPECT_EQ(cv->team_filter, "cv");

  auto bad = controller_->MonthlyReport(root_, ReportRequest{.period = "last month"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("period:"), std::string::npos);
  // The month before: nothing ran, the configured teams show with nothing used.
  auto before = controller_->MonthlyReport(
      root_, ReportRequest{.period = MonthLabel(MonthOf(clock_.Now()).start - Millis(1))});
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->teams.size(), 2U);
  EXPECT_DOUBLE_EQ(before->teams[0].usage.gpu_hours_allocated, 0);
  EXPECT_TRUE(before->queue.empty());
}

}  // namespace
}  // namespace gf
