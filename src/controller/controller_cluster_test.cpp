// The controller with remote nodes (issue #6): a node whose agent falls silent goes down and
// its jobs are requeued, a returning agent's orphan copies are killed, exits count only from
// the job's node; drain and resume; tokens. Agents are FakeAgents attached as a remote agent's
// first hello attaches them (after Start), their heartbeats played by a thread of the test.
#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::milliseconds;

const NodeId kN1("n1");
const NodeId kN2("n2");

// A node with `gpus` GPUs ("<node>-GPU-0", ...).
Node OneGpuNode(const NodeId& name, int gpus = 1) {
  return TestNode(gpus, name.value(), name.value() + "-");
}

JobSpec OneGpuSpec() {
  JobSpec spec;
  spec.argv = {"sleep", "100"};
  spec.workdir = "/tmp";
  spec.request.gpus = 1;
  return spec;
}

JobSpec GangSpec() {
  JobSpec spec = OneGpuSpec();
  spec.request.nodes = 2;
  return spec;
}

std::string EnvOf(const Job& job, const std::string& name) {
  for (const auto& [key, value] : job.spec.env) {
    if (key == name) {
      return value;
    }
  }
  return "(unset)";
}

void ReportExit(Controller& controller, const Job& job, int code, const std::string& cause) {
  controller.OnJobExited(JobExitReport{.job = job.id,
                                       .exit_code = code,
                                       .signal = std::nullopt,
                                       .end_time = job.start_time.value_or(Time{}),
                                       .cause = cause,
                                       .node = job.allocation->node});
}

// Plays the agents' heartbeats: every 10 ms for each node kept alive, as RemoteLink's reports
// do, until the node is silenced (its agent or its network died).
class Heartbeats {
 public:
  explicit Heartbeats(AgentReports& reports) : reports_(reports), thread_([this] { Run(); }) {}
  ~Heartbeats() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

  void KeepAlive(const NodeId& node) {
    std::lock_guard lock(mu_);
    alive_.insert(node);
  }
  void Silence(const NodeId& node) {
    std::lock_guard lock(mu_);
    alive_.erase(node);
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, milliseconds(10), [this] { return stop_; })) {
      for (const NodeId& node : alive_) {
        reports_.OnAgentHeartbeat(node);
      }
    }
  }

  AgentReports& reports_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<NodeId> alive_;  // GUARDED_BY(mu_)
  bool stop_ = false;       // GUARDED_BY(mu_)
  std::thread thread_;      // last: starts once the rest is built
};

class ControllerClusterTest : public ::testing::Test {
 protected:
  // A node is down after this long without a report; 0: never (the drain and token tests).
  virtual Millis NodeTimeout() const { return Millis(0); }

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-cluster-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    options.kill_grace = std::chrono::seconds(1);
    options.node_timeout = NodeTimeout();
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->Start();
    heartbeats_ = std::make_unique<Heartbeats>(*controller_);
  }
  void TearDown() override {
    heartbeats_.reset();
    controller_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A remote agent's first hello, as AgentHub hands it over: attach, then the hello.
  void Join(const NodeId& node, FakeAgent& agent, int gpus = 1) {
    controller_->AttachAgent(node, &agent);
    SayHello(node, {}, gpus);
    heartbeats_->KeepAlive(node);
  }
  void SayHello(const NodeId& node, std::vector<JobId> running, int gpus = 1) {
    controller_->OnAgentHello(
        AgentHello{.node = OneGpuNode(node, gpus), .running = std::move(running), .ended = {}});
  }

  // Submits a one-GPU job and waits until `agent` was asked to launch it and it runs.
  JobId RunningJob(FakeAgent& agent, const JobSpec& spec = OneGpuSpec()) {
    auto job = controller_->Submit(alice_, spec);
    EXPECT_TRUE(job.ok()) << job.error().ToString();
    if (!job.ok()) {
      return JobId();
    }
    EXPECT_TRUE(WaitFor([&] { return LaunchesOf(agent, job->id) == 1; }));
    controller_->OnJobStarted(job->id, 4242, clock_.Now());
    EXPECT_TRUE(WaitFor([&] { return Get(job->id).state == JobState::kRunning; }));
    return job->id;
  }

  static int LaunchesOf(FakeAgent& agent, JobId id) {
    const std::vector<Job> launched = agent.launched();
    return static_cast<int>(
        std::count_if(launched.begin(), launched.end(), [&](const Job& j) { return j.id == id; }));
  }
  static int AcksOf(FakeAgent& agent, JobId id) {
    const std::vector<JobId> acked = agent.acked();
    return static_cast<int>(std::count(acked.begin(), acked.end(), id));
  }
  // The causes of the kills `agent` got for the job.
  static std::vector<std::string> KillsOf(FakeAgent& agent, JobId id) {
    std::vector<std::string> causes;
    for (const auto& [job, cause] : agent.killed()) {
      if (job == id) {
        causes.push_back(cause);
      }
    }
    return causes;
  }

  Job Get(JobId id) {
    auto job = controller_->GetJob(root_, id);
    EXPECT_TRUE(job.ok()) << job.error().ToString();
    return job.ok() ? *job : Job{};
  }
  Node NodeNamed(const NodeId& name) {
    auto nodes = controller_->ListNodes(root_);
    EXPECT_TRUE(nodes.ok());
    for (const Node& n : nodes.ok() ? *nodes : std::vector<Node>{}) {
      if (n.name == name) {
        return n;
      }
    }
    ADD_FAILURE() << "no node " << name.value();
    return Node{};
  }
  // The job's state changes, as "FROM -> TO" (the event text before its cause).
  std::vector<std::string> Transitions(JobId id) {
    auto events = controller_->JobEvents(root_, id);
    EXPECT_TRUE(events.ok());
    std::vector<std::string> out;
    for (const Event& e : events.ok() ? *events : std::vector<Event>{}) {
      if (e.kind == "state") {
        out.push_back(e.message.substr(0, e.message.find(':')));
      }
    }
    return out;
  }
  // Every event not about one job (node and token events), in order; stops the controller
  // first, so that everything is on disk.
  std::vector<std::string> ClusterEventsAfterStop() {
    heartbeats_.reset();
    controller_.reset();
    auto store = OpenSqliteStore(dir_ / "state.db");
    EXPECT_TRUE(store.ok());
    auto events = (*store)->ListEvents(std::nullopt, 0, 10'000);
    EXPECT_TRUE(events.ok());
    std::vector<std::string> out;
    for (const Event& e : events.ok() ? *events : std::vector<Event>{}) {
      if (!e.job) {
        out.push_back(e.message);
      }
    }
    return out;
  }

  std::filesystem::path dir_;
  ManualClock clock_;
  Caller root_ = TestCaller(0, "root");
  Caller alice_ = TestCaller(1000, "alice");
  Caller olga_ = TestCaller(1002, "olga", Role::kOperator);
  FakeAgent a1_;  // the agent of n1
  FakeAgent a2_;  // the agent of n2
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<Heartbeats> heartbeats_;  // after controller_: goes first
};

// ---- Node failure ------------------------------------------------------------------------

class NodeFailureTest : public ControllerClusterTest {
 protected:
  Millis NodeTimeout() const override { return kTimeout; }
  static constexpr Millis kTimeout{400};

  bool IsDown(const NodeId& node) { return NodeNamed(node).state == NodeState::kDown; }
};

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// `first` comes before `second` in `list`, both present.
bool InOrder(const std::vector<std::string>& list,
             const std::string& first,
             const std::string& second) {
  auto a = std::find(list.begin(), list.end(), first);
  return a != list.end() && std::find(a, list.end(), second) != list.end();
}

TEST_F(NodeFailureTest, ASilentNodeGoesDownAndItsJobRunsElsewhere) {
  Join(kN1, a1_);
  const JobId job = RunningJob(a1_);
  heartbeats_->Silence(kN1);
  ASSERT_TRUE(WaitFor([&] { return IsDown(kN1); }));
  const Node down = NodeNamed(kN1);
  EXPECT_NE(down.state_reason.find("node n1 down"), std::string::npos) << down.state_reason;
  ASSERT_TRUE(WaitFor([&] { return Get(job).state == JobState::kPending; }));
  EXPECT_FALSE(Get(job).allocation.has_value());
  EXPECT_TRUE(InOrder(Transitions(job), "RUNNING -> NODE_FAIL", "NODE_FAIL -> PENDING"))
      << ::testing::PrintToString(Transitions(job));

  Join(kN2, a2_);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a2_, job) == 1; }));
  const Job again = Get(job);
  EXPECT_EQ(again.state, JobState::kStarting);
  ASSERT_TRUE(again.allocation.has_value());
  EXPECT_EQ(again.allocation->node, kN2);
  EXPECT_EQ(LaunchesOf(a1_, job), 1);  // not on the node that is down
}

// `gpufleet logs` (ReadJobLog): the state thread finds the job's node, its agent reads; a job
// not started, a requeued one and one whose node is down get errors that say why and where.
TEST_F(NodeFailureTest, LogsAreReadByTheJobsNodeOrTheErrorSaysWhereTheyAre) {
  const auto read = [&](JobId job) {
    return controller_->ReadJobLog(
        alice_, LogRequest{.job = job, .stream = LogStream::kStderr, .offset = 0, .limit = 100});
  };
  Join(kN1, a1_);
  const JobId ended = RunningJob(a1_);
  controller_->OnJobExited(JobExitReport{.job = ended,
                                         .exit_code = 0,
                                         .signal = std::nullopt,
                                         .end_time = clock_.Now(),
                                         .cause = "exited",
                                         .node = kN1});
  ASSERT_TRUE(WaitFor([&] { return Get(ended).state == JobState::kCompleted; }));
  Result<LogChunk> chunk = read(ended);
  ASSERT_TRUE(chunk.ok()) << chunk.error().ToString();
  EXPECT_EQ(chunk->data, "stderr of job " + std::to_string(ended.value()));
  ASSERT_EQ(a1_.reads().size(), 1u);
  EXPECT_EQ(a1_.reads()[0].limit, 100);

  const JobId running = RunningJob(a1_);
  auto waiting = controller_->Submit(alice_, OneGpuSpec());  // n1's one GPU is taken
  ASSERT_TRUE(waiting.ok());
  chunk = read(waiting->id);
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(chunk.error().message.find("is PENDING and has not started"), std::string::npos)
      << chunk.error().message;

  heartbeats_->Silence(kN1);
  ASSERT_TRUE(WaitFor([&] { return IsDown(kN1); }));
  ASSERT_TRUE(WaitFor([&] { return Get(running).state == JobState::kPending; }));
  chunk = read(running);  // requeued: its new run has not started
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(chunk.error().message.find("requeued after node failure"), std::string::npos)
      << chunk.error().message;
  chunk = read(ended);  // its output is on a node that is down
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(chunk.error().message.find("node n1 is down"), std::string::npos)
      << chunk.error().message;
  EXPECT_NE(chunk.error().message.find("/logs/" + std::to_string(ended.value()) + ".err"),
            std::string::npos)
      << chunk.error().message;
  EXPECT_EQ(a1_.reads().size(), 1u);  // no read reached the agent of a node that is down
}

// Two jobs lost with their node: the requeueable one goes back to the queue and runs elsewhere;
// the one that must not run twice (--no-requeue) ends FAILED with the cause, a job waiting for
// it to complete is cancelled, and when its agent comes back with both copies still running,
// both are killed as orphans and the failed job never runs again.
TEST_F(NodeFailureTest, AJobThatMustNotRunTwiceFailsWithItsNode) {
  Join(kN1, a1_, 2);
  const JobId requeued = RunningJob(a1_);
  JobSpec once = OneGpuSpec();
  once.requeue = false;
  const JobId failed = RunningJob(a1_, once);
  JobSpec after_spec = OneGpuSpec();
  after_spec.after = {Dependency{.job = failed, .kind = DependencyKind::kOk}};
  auto dependent = controller_->Submit(alice_, after_spec);
  ASSERT_TRUE(dependent.ok()) << dependent.error().ToString();

  heartbeats_->Silence(kN1);
  ASSERT_TRUE(WaitFor([&] {
    return Get(requeued).state == JobState::kPending && Get(failed).state == JobState::kFailed;
  }));
  EXPECT_TRUE(InOrder(Transitions(requeued), "RUNNING -> NODE_FAIL", "NODE_FAIL -> PENDING"));
  const std::vector<std::string> transitions = Transitions(failed);
  EXPECT_TRUE(InOrder(transitions, "RUNNING -> NODE_FAIL", "NODE_FAIL -> FAILED"))
      << ::testing::PrintToString(transitions);
  EXPECT_FALSE(Contains(transitions, "NODE_FAIL -> PENDING"));
  const Job lost = Get(failed);
  EXPECT_NE(lost.reason.find("node n1 down"), std::string::npos) << lost.reason;
  EXPECT_NE(lost.reason.find("not requeued (--no-requeue)"), std::string::npos) << lost.reason;
  EXPECT_TRUE(lost.end_time.has_value());
  ASSERT_TRUE(WaitFor([&] { return Get(dependent->id).state == JobState::kCancelled; }));

  Join(kN2, a2_);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a2_, requeued) == 1; }));
  SayHello(kN1, {requeued, failed}, 2);
  heartbeats_->KeepAlive(kN1);
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, failed).size() == 1; }));
  EXPECT_NE(KillsOf(a1_, failed)[0].find("orphan"), std::string::npos);
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, requeued).size() == 1; }));
  EXPECT_EQ(LaunchesOf(a1_, failed), 1);
  EXPECT_EQ(LaunchesOf(a2_, failed), 0);
  EXPECT_EQ(Get(failed).state, JobState::kFailed);
}

// A member's node dies: the member is requeued, the other member is stopped and requeued with
// it, and neither starts again until both have stopped and two nodes can take them.
TEST_F(NodeFailureTest, AGangMembersNodeDiesAndTheGangGoesBackWhole) {
  Join(kN1, a1_);
  Join(kN2, a2_);
  auto submitted = controller_->Submit(alice_, GangSpec());
  ASSERT_TRUE(submitted.ok()) << submitted.error().ToString();
  const JobId lead = submitted->id;
  const JobId second(lead.value() + 1);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a1_, lead) == 1 && LaunchesOf(a2_, second) == 1; }));
  controller_->OnJobStarted(lead, 11, clock_.Now());
  controller_->OnJobStarted(second, 12, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return Get(lead).state == JobState::kRunning; }));

  heartbeats_->Silence(kN2);
  ASSERT_TRUE(WaitFor([&] { return Get(second).state == JobState::kPending; }));
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, lead).size() == 1; }));
  EXPECT_EQ(KillsOf(a1_, lead)[0].rfind("requeued with its gang's member " +
                                            std::to_string(second.value()) + " (node 2 of 2)",
                                        0),
            0U)
      << KillsOf(a1_, lead)[0];
  EXPECT_NE(
      Get(second).reason.find("waiting for its gang's members " + std::to_string(lead.value())),
      std::string::npos)
      << Get(second).reason;
  ReportExit(*controller_, Get(lead), 143, "killed");
  ASSERT_TRUE(WaitFor([&] { return Get(lead).state == JobState::kPending; }));
  EXPECT_TRUE(InOrder(Transitions(lead), "RUNNING -> PREEMPTED", "PREEMPTED -> PENDING"));
  // n2 is down: one node cannot take a gang of two.
  EXPECT_EQ(LaunchesOf(a1_, lead), 1);
  Join(kN2, a2_);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a1_, lead) == 2 && LaunchesOf(a2_, second) == 2; }));
}

TEST_F(NodeFailureTest, HeartbeatsKeepANodeUp) {
  Join(kN1, a1_);
  const JobId job = RunningJob(a1_);
  // Three timeouts long, the node must not go down while its agent reports.
  const auto until = std::chrono::steady_clock::now() + 3 * kTimeout;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(NodeNamed(kN1).state, NodeState::kUp);
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Get(job).state, JobState::kRunning);
  // The same node without heartbeats: the timeout above was live.
  heartbeats_->Silence(kN1);
  EXPECT_TRUE(WaitFor([&] { return IsDown(kN1); }));
}

TEST_F(NodeFailureTest, AJobBeingCancelledWhenItsNodeDiesEndsCancelled) {
  Join(kN1, a1_);
  const JobId job = RunningJob(a1_);
  ASSERT_TRUE(controller_->CancelJob(alice_, job).ok());
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, job).size() == 1; }));
  heartbeats_->Silence(kN1);
  ASSERT_TRUE(WaitFor([&] { return Get(job).state == JobState::kCancelled; }));
  EXPECT_NE(Get(job).reason.find("node n1 down"), std::string::npos) << Get(job).reason;
  EXPECT_FALSE(Contains(Transitions(job), "RUNNING -> NODE_FAIL"));

  // Its agent comes back still running it: that copy is an orphan and is killed; it never
  // runs again anywhere.
  Join(kN2, a2_);
  SayHello(kN1, {job});
  heartbeats_->KeepAlive(kN1);
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, job).size() == 2; }));
  EXPECT_NE(KillsOf(a1_, job)[1].find("orphan"), std::string::npos);
  EXPECT_EQ(LaunchesOf(a2_, job), 0);
  EXPECT_EQ(Get(job).state, JobState::kCancelled);
}

TEST_F(NodeFailureTest, AReturningAgentsOrphanIsKilledAndItsExitIgnored) {
  Join(kN1, a1_);
  const JobId job = RunningJob(a1_);
  heartbeats_->Silence(kN1);
  ASSERT_TRUE(WaitFor([&] { return Get(job).state == JobState::kPending; }));
  Join(kN2, a2_);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a2_, job) == 1; }));
  controller_->OnJobStarted(job, 5151, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return Get(job).state == JobState::kRunning; }));

  // n1's agent was only cut off: it comes back with its copy of the job still running.
  SayHello(kN1, {job});
  heartbeats_->KeepAlive(kN1);
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, job).size() == 1; }));
  EXPECT_NE(KillsOf(a1_, job)[0].find("orphan"), std::string::npos) << KillsOf(a1_, job)[0];
  EXPECT_TRUE(KillsOf(a2_, job).empty());
  EXPECT_EQ(NodeNamed(kN1).state, NodeState::kUp);
  EXPECT_TRUE(NodeNamed(kN1).state_reason.empty());

  // The orphan's exit, from n1: the job runs on n2, so it does not end; only n1 may forget it.
  controller_->OnJobExited(JobExitReport{.job = job,
                                         .exit_code = 143,
                                         .signal = 15,
                                         .end_time = clock_.Now(),
                                         .cause = "killed",
                                         .node = kN1});
  // Reads do not wait for the state thread: the exit's turn is over once n1 has its ack.
  ASSERT_TRUE(WaitFor([&] { return AcksOf(a1_, job) == 1; }));
  EXPECT_EQ(Get(job).state, JobState::kRunning);
  EXPECT_EQ(AcksOf(a2_, job), 0);

  // The real exit, from n2, ends it.
  controller_->OnJobExited(JobExitReport{.job = job,
                                         .exit_code = 0,
                                         .signal = std::nullopt,
                                         .end_time = clock_.Now(),
                                         .cause = "exited with 0",
                                         .node = kN2});
  ASSERT_TRUE(WaitFor([&] { return Get(job).state == JobState::kCompleted; }));
  ASSERT_TRUE(WaitFor([&] { return AcksOf(a2_, job) == 1; }));
  EXPECT_EQ(AcksOf(a1_, job), 1);
}

TEST_F(NodeFailureTest, AHelloWithoutTheNodesJobsLaunchesStartingOnesAgain) {
  // One job running on n1, one starting on n2 (each node has one GPU).
  Join(kN1, a1_);
  const JobId running = RunningJob(a1_);
  auto starting = controller_->Submit(alice_, OneGpuSpec());
  ASSERT_TRUE(starting.ok());
  Join(kN2, a2_);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a2_, starting->id) == 1; }));
  ASSERT_EQ(Get(starting->id).state, JobState::kStarting);

  // n2's agent restarted before the launch reached it: the launch is sent again.
  SayHello(kN2, {});
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a2_, starting->id) == 2; }));
  EXPECT_EQ(Get(starting->id).state, JobState::kStarting);
  EXPECT_FALSE(Contains(Transitions(starting->id), "STARTING -> NODE_FAIL"));

  // n1's agent restarted and lost the running job's supervisor: requeued (and placed again at
  // once, n1 being free now), not failed.
  SayHello(kN1, {});
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a1_, running) == 2; }));
  const std::vector<std::string> transitions = Transitions(running);
  EXPECT_TRUE(InOrder(transitions, "RUNNING -> NODE_FAIL", "NODE_FAIL -> PENDING"))
      << ::testing::PrintToString(transitions);
  EXPECT_FALSE(Contains(transitions, "RUNNING -> FAILED"));
  auto events = controller_->JobEvents(root_, running);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(std::any_of(events->begin(), events->end(), [](const Event& e) {
    return e.message.find("supervisor was not found on n1") != std::string::npos;
  }));
}

// ---- Drain and resume --------------------------------------------------------------------

// ---- Multi-node (gang) jobs ----------------------------------------------------------------

// Both members start at once, one per node, each told its rank, the node list and the master;
// when one fails, the other is stopped and ends CANCELLED with the cause.
TEST_F(ControllerClusterTest, AGangStartsWholeAndAFailedMemberCancelsTheOther) {
  Join(kN1, a1_);
  Join(kN2, a2_);
  const JobId busy = RunningJob(a1_);  // best fit: n1 (a tie, by name)
  auto submitted = controller_->Submit(alice_, GangSpec());
  ASSERT_TRUE(submitted.ok()) << submitted.error().ToString();
  const JobId lead = submitted->id;
  const JobId second(lead.value() + 1);
  ASSERT_TRUE(submitted->spec.gang.has_value());
  EXPECT_EQ(Get(second).spec.gang->gang_job, lead);
  EXPECT_EQ(Get(second).spec.gang->rank, 1);
  // One node free: the gang waits whole.
  ASSERT_TRUE(
      WaitFor([&] { return Get(lead).reason.find("on each of 2 nodes") != std::string::npos; }));
  EXPECT_EQ(Get(second).state, JobState::kPending);
  EXPECT_EQ(LaunchesOf(a2_, lead) + LaunchesOf(a2_, second), 0);

  ReportExit(*controller_, Get(busy), 0, "exited with 0");
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a1_, lead) == 1 && LaunchesOf(a2_, second) == 1; }));
  for (const Job& launched : {a1_.launched().back(), a2_.launched().back()}) {
    const bool first = launched.id == lead;
    EXPECT_EQ(EnvOf(launched, "GPUFLEET_GANG_ID"), std::to_string(lead.value()));
    EXPECT_EQ(EnvOf(launched, "GPUFLEET_NODE_RANK"), first ? "0" : "1");
    EXPECT_EQ(EnvOf(launched, "GPUFLEET_NUM_NODES"), "2");
    EXPECT_EQ(EnvOf(launched, "GPUFLEET_NODELIST"), "n1,n2");
    EXPECT_EQ(EnvOf(launched, "GPUFLEET_MASTER_ADDR"), "n1");
  }
  EXPECT_TRUE(Get(lead).spec.env.empty());  // set at launch, not stored: a rerun gets new nodes
  controller_->OnJobStarted(lead, 11, clock_.Now());
  controller_->OnJobStarted(second, 12, clock_.Now());
  ASSERT_TRUE(WaitFor([&] { return Get(second).state == JobState::kRunning; }));

  ReportExit(*controller_, Get(second), 3, "exited with 3");
  ASSERT_TRUE(WaitFor([&] { return KillsOf(a1_, lead).size() == 1; }));
  EXPECT_EQ(KillsOf(a1_, lead)[0],
            "its gang's member " + std::to_string(second.value()) +
                " (node 2 of 2) ended FAILED (exited with 3)");
  ReportExit(
      *controller_, Get(lead), 143, KillsOf(a1_, lead)[0] + ": SIGTERM, exited within grace");
  ASSERT_TRUE(WaitFor([&] { return Get(lead).state == JobState::kCancelled; }));
  EXPECT_EQ(Get(second).state, JobState::kFailed);
}

TEST_F(ControllerClusterTest, OnlyOperatorsDrainAndADrainNeedsAReason) {
  Join(kN1, a1_);
  for (const auto& result :
       {controller_->DrainNode(alice_, kN1, "bad fan"), controller_->ResumeNode(alice_, kN1)}) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ErrorCode::kPermissionDenied);
  }
  auto empty = controller_->DrainNode(olga_, kN1, "");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(empty.error().message.rfind("reason:", 0), 0u) << empty.error().message;
  EXPECT_FALSE(controller_->DrainNode(olga_, kN1, std::string(501, 'x')).ok());
  auto unknown = controller_->DrainNode(olga_, NodeId("nope"), "bad fan");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(NodeNamed(kN1).state, NodeState::kUp);

  auto admin = controller_->DrainNode(TestCaller(1003, "ada", Role::kAdmin), kN1, "bad fan");
  ASSERT_TRUE(admin.ok()) << admin.error().ToString();
  EXPECT_EQ(admin->state, NodeState::kDrained);  // no job on it
  EXPECT_TRUE(controller_->ResumeNode(root_, kN1).ok());
  EXPECT_EQ(NodeNamed(kN1).state, NodeState::kUp);
}

TEST_F(ControllerClusterTest, ADrainWaitsForRunningJobsAndTakesNoNewOnes) {
  Join(kN1, a1_);
  const JobId first = RunningJob(a1_);
  auto drained = controller_->DrainNode(olga_, kN1, "bad fan");
  ASSERT_TRUE(drained.ok()) << drained.error().ToString();
  EXPECT_EQ(drained->state, NodeState::kDraining);
  EXPECT_EQ(drained->state_reason, "bad fan");

  // Its job runs on; a new one is not placed there.
  EXPECT_EQ(Get(first).state, JobState::kRunning);
  controller_->OnJobExited(JobExitReport{.job = first,
                                         .exit_code = 0,
                                         .signal = std::nullopt,
                                         .end_time = clock_.Now(),
                                         .cause = "exited with 0",
                                         .node = kN1});
  ASSERT_TRUE(WaitFor([&] { return NodeNamed(kN1).state == NodeState::kDrained; }));
  auto second = controller_->Submit(alice_, OneGpuSpec());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Get(second->id).state, JobState::kPending);  // the pass ran with the submit
  // An agent's reconnect does not undo an operator's drain.
  SayHello(kN1, {});
  EXPECT_EQ(NodeNamed(kN1).state, NodeState::kDrained);
  EXPECT_EQ(Get(second->id).state, JobState::kPending);
  EXPECT_EQ(LaunchesOf(a1_, second->id), 0);

  auto resumed = controller_->ResumeNode(olga_, kN1);
  ASSERT_TRUE(resumed.ok()) << resumed.error().ToString();
  EXPECT_EQ(resumed->state, NodeState::kUp);
  ASSERT_TRUE(WaitFor([&] { return LaunchesOf(a1_, second->id) == 1; }));

  const std::vector<std::string> events = ClusterEventsAfterStop();
  EXPECT_TRUE(InOrder(events, "drain n1: bad fan", "node n1 drained: no job runs on it any more"))
      << ::testing::PrintToString(events);
  EXPECT_TRUE(InOrder(events, "node n1 drained: no job runs on it any more", "resume n1"));
}

// ---- Tokens ------------------------------------------------------------------------------

// Debian always has these accounts; tokens act as Unix users known to the server.
const std::string kUserA = "daemon";
const std::string kUserB = "nobody";

TokenRequest UserToken(const std::string& user) {
  return TokenRequest{.kind = TokenKind::kUser,
                      .subject = user,
                      .role = Role::kUser,
                      .description = "test",
                      .expires_in = std::nullopt};
}

TEST_F(ControllerClusterTest, OnlyAdminsCreateTokensForKnownUsers) {
  auto refused = controller_->CreateToken(alice_, UserToken(kUserA));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  auto operator_refused = controller_->CreateToken(olga_, UserToken(kUserA));
  ASSERT_FALSE(operator_refused.ok());
  EXPECT_EQ(operator_refused.error().code, ErrorCode::kPermissionDenied);

  auto unknown = controller_->CreateToken(root_, UserToken("no-such-user-gf"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(unknown.error().message.rfind("user:", 0), 0u) << unknown.error().message;

  auto issued = controller_->CreateToken(root_, UserToken(kUserA));
  ASSERT_TRUE(issued.ok()) << issued.error().ToString();
  // Usable the moment it is handed over.
  auto caller = controller_->Authenticate(issued->text);
  ASSERT_TRUE(caller.ok()) << caller.error().ToString();
  EXPECT_TRUE(caller->authenticated);
  EXPECT_EQ(caller->user, kUserA);
  EXPECT_EQ(caller->uid, issued->token.uid);
  EXPECT_NE(caller->uid, 0u);
}

TEST_F(ControllerClusterTest, UsersListAndRevokeOnlyTheirOwnTokens) {
  auto a = controller_->CreateToken(root_, UserToken(kUserA));
  auto b = controller_->CreateToken(root_, UserToken(kUserB));
  auto node = controller_->CreateToken(root_,
                                       TokenRequest{.kind = TokenKind::kNode,
                                                    .subject = "n1",
                                                    .role = Role::kUser,
                                                    .description = "",
                                                    .expires_in = std::nullopt});
  ASSERT_TRUE(a.ok() && b.ok() && node.ok());
  const Caller user_a = TestCaller(a->token.uid, kUserA);
  const Caller user_b = TestCaller(b->token.uid, kUserB);

  auto listed = controller_->ListTokens(user_b);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].id, b->token.id);
  EXPECT_TRUE((*listed)[0].secret_hash.empty());
  auto all = controller_->ListTokens(root_);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  for (const ApiToken& t : *all) {
    EXPECT_TRUE(t.secret_hash.empty()) << t.id;
  }

  // Someone else's token is not found, as if it did not exist; it still works.
  auto other = controller_->RevokeToken(user_a, b->token.id);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(controller_->Authenticate(b->text).ok());

  auto revoked = controller_->RevokeToken(user_b, b->token.id);
  ASSERT_TRUE(revoked.ok()) << revoked.error().ToString();
  EXPECT_TRUE(revoked->revoked.has_value());
  auto after = controller_->Authenticate(b->text);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, ErrorCode::kPermissionDenied);
  EXPECT_TRUE(controller_->Authenticate(a->text).ok());
  // A node token is no user's: only an admin revokes it.
  auto not_hers = controller_->RevokeToken(user_a, node->token.id);
  ASSERT_FALSE(not_hers.ok());
  EXPECT_EQ(not_hers.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(controller_->RevokeToken(root_, node->token.id).ok());
}

}  // namespace
}  // namespace gf
