// The controller and `gpufleet sim` live one job lifecycle (decision 0007): given the same
// cluster, policy and jobs, a real Controller (SQLite store, a test agent that runs each job for
// its trace duration) and the simulator's engine must start and stop every job at the same
// instants. The driver plays the agents on a manual clock: it submits each job at its trace
// time, reports a launched job as started when the launch lag is over, its exit after its
// duration from then,
// and a killed job's exit when the kill grace ends (a job that ignores SIGTERM is killed by
// SIGKILL then; the simulator is given the same grace). It visits
// every instant where something happens and the second after it, when the pass rule owes a full
// pass (lifecycle/pass_planner.h), and lets the controller settle there.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "sim/engine.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::seconds;

using Runs = std::vector<std::pair<Millis, Millis>>;  // (start, end) of each run, from time 0

// A node whose agent falls silent at `silent_at` and says hello again, without its jobs, at
// `back_at`: the controller finds it down node_timeout after its last report, as the simulator's
// node failure then, repaired at `back_at`.
struct Outage {
  std::size_t node = 0;  // index into Scenario::nodes
  Millis silent_at{0};
  Millis back_at{0};
};

struct Scenario {
  std::vector<Node> nodes;
  std::vector<sim::TraceJob> jobs;  // by submit time
  PolicyConfig policy;
  std::chrono::seconds kill_grace{0};
  std::chrono::seconds launch_lag{0};
  std::optional<Outage> outage{};
  std::chrono::seconds node_timeout{60};
};

sim::TraceJob TraceJobOf(std::string id,
                         int submit_s,
                         int gpus,
                         int duration_s,
                         std::string user,
                         std::string team = "") {
  return sim::TraceJob{.id = std::move(id),
                       .submit = seconds(submit_s),
                       .duration = seconds(duration_s),
                       .gpus = gpus,
                       .user = std::move(user),
                       .team = std::move(team)};
}

std::vector<Runs> Simulated(const Scenario& scenario) {
  sim::SimOptions options{.policy = scenario.policy,
                          .kill_grace = scenario.kill_grace,
                          .launch_lag = scenario.launch_lag};
  if (const std::optional<Outage>& out = scenario.outage) {
    const Millis down = out->silent_at + scenario.node_timeout;
    options.node_failures = {
        sim::NodeFailure{.node = out->node, .at = down, .repair = out->back_at - down}};
  }
  auto result = sim::Simulate(scenario.nodes, scenario.jobs, options);
  EXPECT_TRUE(result.ok()) << result.error().message;
  std::vector<Runs> out;
  for (const sim::JobOutcome& job : result->jobs) {
    out.push_back(job.runs);
  }
  return out;
}

// The Controller run of `scenario`: each job's runs, as its test agent saw them.
class ControllerRun {
 public:
  ControllerRun(const Scenario& scenario, const std::filesystem::path& dir)
      : scenario_(scenario), clock_(kOrigin) {
    std::filesystem::remove_all(dir);
    auto store = OpenSqliteStore(dir / "state.db");
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(5);
    options.telemetry = &telemetry_;
    options.policy = scenario.policy;
    options.kill_grace = scenario.kill_grace;
    options.node_timeout = scenario.node_timeout;
    // Liveness on the manual clock: time since the origin, as a monotonic clock reads it.
    options.liveness_clock = [this] {
      return std::chrono::steady_clock::time_point{} + (clock_.Now() - kOrigin);
    };
    for (const sim::TraceJob& job : scenario.jobs) {
      if (!job.team.empty()) {
        options.team_of_user[job.user] = job.team;  // its team's member ([team.NAME] members)
      }
    }
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    EXPECT_TRUE(controller_->Load().ok());
    for (const Node& node : scenario.nodes) {
      agents_.emplace(node.name, std::make_unique<FakeAgent>());
      controller_->AttachAgent(node.name, agents_.at(node.name).get());
    }
    controller_->Start();
    for (const Node& node : scenario.nodes) {
      controller_->OnAgentHello(AgentHello{.node = node, .running = {}, .ended = {}});
    }
    EXPECT_TRUE(
        WaitFor([&] { return controller_->ListNodes(root_)->size() == scenario.nodes.size(); }));
  }

  std::vector<Runs> Run() {
    std::set<Millis> visit;
    Millis horizon{0};  // no run lasts past the jobs' work done one after another
    for (const sim::TraceJob& job : scenario_.jobs) {
      Visit(visit, job.submit);
      horizon = std::max(horizon, job.submit) + job.duration + scenario_.launch_lag;
    }
    if (scenario_.outage) {
      horizon += scenario_.outage->back_at;
      Visit(visit, scenario_.outage->silent_at);
      Visit(visit, scenario_.outage->silent_at + scenario_.node_timeout);  // found down
      Visit(visit, scenario_.outage->back_at);
    }
    // Heartbeats often enough that no live node ever looks silent.
    for (Millis t{0}; t <= horizon; t += scenario_.node_timeout / 2) {
      visit.insert(t);
    }
    std::size_t next_job = 0;
    while (!visit.empty()) {
      const Millis now = *visit.begin();
      visit.erase(visit.begin());
      clock_.Set(kOrigin + now);
      // Ends first, then arrivals, as the simulator applies an instant's events.
      std::vector<JobId> ending;
      for (const auto& [id, end] : ends_) {
        if (end == now) {
          ending.push_back(id);
        }
      }
      for (const JobId id : ending) {
        Exit(id, now, 0, "exited with status 0");
      }
      for (auto it = starting_.begin(); it != starting_.end();) {
        if (it->second == now) {
          controller_->OnJobStarted(it->first, 4242, kOrigin + now);
          it = starting_.erase(it);
        } else {
          ++it;
        }
      }
      while (next_job < scenario_.jobs.size() && scenario_.jobs[next_job].submit == now) {
        Submit(scenario_.jobs[next_job++]);
      }
      Report(now);
      Settle(now, visit);
    }
    std::vector<Runs> out;
    for (const JobId id : ids_) {
      out.push_back(runs_[id]);
    }
    return out;
  }

 private:
  static constexpr Time kOrigin = Time(Millis(1'700'000'000'000));

  static void Visit(std::set<Millis>& visit, Millis at) {
    visit.insert(at);
    visit.insert(at + seconds(1));  // the full pass the rule owes after an incremental one
  }

  // Every agent reports, but a silent one; a silent one that comes back says hello.
  void Report(Millis now) {
    for (std::size_t n = 0; n < scenario_.nodes.size(); ++n) {
      const Node& node = scenario_.nodes[n];
      const std::optional<Outage>& out = scenario_.outage;
      if (out && out->node == n && now > out->silent_at && now < out->back_at) {
        continue;
      }
      if (out && out->node == n && now == out->back_at) {
        controller_->OnAgentHello(AgentHello{.node = node, .running = {}, .ended = {}});
      } else {
        controller_->OnAgentHeartbeat(node.name);
      }
    }
  }

  // A running job the controller took back (its node was lost): its run ended now.
  void CloseLostRuns(Millis now) {
    for (auto it = ends_.begin(); it != ends_.end();) {
      const JobState state = controller_->GetJob(root_, it->first)->state;
      if (state == JobState::kPending || state == JobState::kNodeFail) {
        runs_[it->first].back().second = now;
        it = ends_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void Submit(const sim::TraceJob& job) {
    JobSpec spec;
    spec.argv = {"sleep", std::to_string(job.duration.count() / 1000)};
    spec.workdir = "/tmp";
    spec.request.gpus = job.gpus;
    spec.team = job.team;
    for (const sim::TraceDependency& after : job.after) {
      spec.after.push_back(Dependency{.job = id_of_.at(after.job), .kind = after.kind});
    }
    const std::uint32_t uid = UidOf(job.user);
    uid_of_[job.user] = uid;
    auto submitted = controller_->Submit(TestCaller(uid, job.user), spec);
    ASSERT_TRUE(submitted.ok()) << submitted.error().ToString();
    ids_.push_back(submitted->id);
    id_of_[job.id] = submitted->id;
    duration_[submitted->id] = job.duration;
  }

  std::uint32_t UidOf(const std::string& user) {
    auto it = uid_of_.find(user);
    return it != uid_of_.end() ? it->second : static_cast<std::uint32_t>(1000 + uid_of_.size());
  }

  void Exit(JobId id, Millis now, int code, const std::string& cause) {
    runs_[id].back().second = now;
    ends_.erase(id);
    controller_->OnJobExited(JobExitReport{.job = id,
                                           .exit_code = code,
                                           .signal = std::nullopt,
                                           .end_time = kOrigin + now,
                                           .cause = cause,
                                           .node = node_of_.at(id)});
  }

  // A command through the state thread: once it returns, the turn that applied it has run its
  // pass (at the clock's now); the second such call returns after that turn's launches and
  // kills reached the agents (they follow the commit, before the next turn).
  void Turn() { (void)controller_->ExplainJob(root_, JobId(1)); }

  // Plays the agents until the controller asks nothing more of them at `now`.
  void Settle(Millis now, std::set<Millis>& visit) {
    for (int round = 0; round < 100; ++round) {
      Turn();
      Turn();
      CloseLostRuns(now);
      bool acted = false;
      for (auto& [node, agent] : agents_) {
        const std::vector<Job> launched = agent->launched();
        for (std::size_t i = launched_seen_[node]; i < launched.size(); ++i) {
          const JobId id = launched[i].id;
          node_of_[id] = node;
          runs_[id].emplace_back(now, Millis(-1));
          ends_[id] = now + scenario_.launch_lag + duration_.at(id);
          Visit(visit, ends_[id]);
          if (limit_) {  // the turn that finds its time limit reached, if it runs that long
            Visit(visit, now + scenario_.launch_lag + *limit_);
          }
          if (scenario_.launch_lag.count() == 0) {
            controller_->OnJobStarted(id, 4242, kOrigin + now);
          } else {
            starting_[id] = now + scenario_.launch_lag;  // the agent reports it then
            Visit(visit, starting_[id]);
          }
          acted = true;
        }
        launched_seen_[node] = launched.size();
        const auto killed = agent->killed();
        for (std::size_t i = killed_seen_[node]; i < killed.size(); ++i) {
          // It ignores SIGTERM: SIGKILL ends it when the grace is over, unless it ends first.
          Millis& end = ends_.at(killed[i].first);
          end = std::min(end, now + scenario_.kill_grace);
          Visit(visit, end);
          if (scenario_.kill_grace.count() == 0) {
            Exit(killed[i].first, now, 137, "killed by signal 9");
          }
          acted = true;
        }
        killed_seen_[node] = killed.size();
      }
      if (!acted) {
        return;
      }
    }
    ADD_FAILURE() << "the controller kept launching or killing at " << now.count() << " ms";
  }

  const Scenario& scenario_;
  // The time limit every job runs under (the default class's), if any.
  std::optional<std::chrono::seconds> limit_ = EffectiveTimeLimit(
      ClassPolicyFor(scenario_.policy, PriorityClass{scenario_.policy.default_class}),
      std::nullopt);
  ManualClock clock_;
  Telemetry telemetry_;
  Caller root_ = TestCaller(0, "root");
  std::map<NodeId, std::unique_ptr<FakeAgent>> agents_;
  std::unique_ptr<Controller> controller_;
  std::map<std::string, std::uint32_t> uid_of_;
  std::vector<JobId> ids_;              // in trace order
  std::map<std::string, JobId> id_of_;  // by trace id
  std::map<JobId, Millis> duration_;
  std::map<JobId, NodeId> node_of_;
  std::map<JobId, Millis> ends_;      // running jobs: when their run ends
  std::map<JobId, Millis> starting_;  // launched jobs: when their agent reports them started
  std::map<JobId, Runs> runs_;
  std::map<NodeId, std::size_t> launched_seen_;
  std::map<NodeId, std::size_t> killed_seen_;
};

std::filesystem::path TestDir() {
  return std::filesystem::temp_directory_path() /
         ("gf-parity-" + std::to_string(getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

std::string Show(const std::vector<Runs>& runs) {
  std::string out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out += "job " + std::to_string(i) + ":";
    for (const auto& [start, end] : runs[i]) {
      out += " " + std::to_string(start.count() / 1000) + "-" + std::to_string(end.count() / 1000);
    }
    out += "\n";
  }
  return out;
}

void ExpectSameTimeline(const Scenario& scenario, const std::vector<Runs>& expected) {
  const std::vector<Runs> simulated = Simulated(scenario);
  ControllerRun controller(scenario, TestDir());
  const std::vector<Runs> real = controller.Run();
  EXPECT_EQ(simulated, expected) << "simulated:\n" << Show(simulated);
  EXPECT_EQ(real, expected) << "controller:\n" << Show(real);
  std::filesystem::remove_all(TestDir());
}

Runs Span(int start_s, int end_s) {
  return {{seconds(start_s), seconds(end_s)}};
}

// Dependencies: b waits for a to complete and c for a to end, held back meanwhile, so d,
// submitted later, takes the free GPU at once; f waits for d to complete and starts at its end.
// a reaches its time limit at 100 s, and is stopped (then killed when the kill grace is over,
// as it ignores SIGTERM): that breaks b's :ok (b is cancelled, and e, which waited for b to
// complete, with it) and meets c's, which starts as soon as a has gone.
Scenario DependenciesAndATimeLimit(std::chrono::seconds kill_grace) {
  Scenario scenario;
  scenario.nodes = {TestNode(2, "n1", "n1-")};
  for (PriorityClassPolicy& cls : scenario.policy.classes) {
    cls.default_time_limit = seconds(100);
  }
  scenario.kill_grace = kill_grace;
  const auto after = [](sim::TraceJob job, std::string on, DependencyKind kind) {
    job.after = {sim::TraceDependency{.job = std::move(on), .kind = kind}};
    return job;
  };
  scenario.jobs = {TraceJobOf("a", 0, 1, 150, "alice"),
                   after(TraceJobOf("b", 0, 1, 20, "alice"), "a", DependencyKind::kOk),
                   after(TraceJobOf("c", 0, 1, 30, "alice"), "a", DependencyKind::kAny),
                   TraceJobOf("d", 10, 1, 40, "alice"),
                   after(TraceJobOf("e", 20, 1, 10, "alice"), "b", DependencyKind::kOk),
                   after(TraceJobOf("f", 20, 1, 10, "alice"), "d", DependencyKind::kOk)};
  return scenario;
}

TEST(LifecycleParityTest, DependenciesHoldJobsUntilMetAndCancelThemWhenBroken) {
  ExpectSameTimeline(DependenciesAndATimeLimit(seconds(0)),
                     {Span(0, 100), {}, Span(100, 130), Span(10, 50), {}, Span(50, 60)});
}

// The same with a kill grace of 10 s: a, past its time limit, holds its GPU until SIGKILL at
// 110 s (TIMEOUT all the same), and c starts then.
TEST(LifecycleParityTest, ATimedOutJobHoldsItsGpuThroughTheKillGrace) {
  ExpectSameTimeline(DependenciesAndATimeLimit(seconds(10)),
                     {Span(0, 110), {}, Span(110, 140), Span(10, 50), {}, Span(50, 60)});
}

// Backfill after an end: x's end frees n2; h, the head, needs both of n1's GPUs (y holds them
// until its end); s, behind it, is backfilled onto n2 by the full pass a second after x's end.
Scenario BackfillAfterAnEnd(std::chrono::seconds launch_lag) {
  Scenario scenario;
  scenario.nodes = {TestNode(2, "n1", "n1-"), TestNode(1, "n2", "n2-")};
  for (PriorityClassPolicy& cls : scenario.policy.classes) {
    cls.default_time_limit = seconds(100);
  }
  scenario.launch_lag = launch_lag;
  scenario.jobs = {TraceJobOf("y", 0, 2, 100, "alice"),
                   TraceJobOf("x", 0, 1, 30, "alice"),
                   TraceJobOf("h", 1, 2, 10, "alice"),
                   TraceJobOf("s", 2, 1, 10, "alice")};
  return scenario;
}

// A preemption: team a is guaranteed both GPUs; bob's job of team b runs on borrowed GPUs and
// is preempted by alice's of team a once it has run the minimum run time (10 minutes); it goes
// back to the queue at its place and runs again, from scratch, once a1 ends.
Scenario PreemptionOfBorrowedGpus(std::chrono::seconds kill_grace) {
  Scenario scenario;
  scenario.nodes = {TestNode(2, "n1", "n1-")};
  scenario.policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 2}, TeamPolicy{.name = "b"}};
  scenario.kill_grace = kill_grace;
  scenario.jobs = {TraceJobOf("b1", 0, 2, 1000, "bob", "b"),
                   TraceJobOf("a1", 700, 2, 100, "alice", "a")};
  return scenario;
}

// A node failure: n2's agent falls silent at 100 s; 60 s later the controller finds the node
// down and requeues b (NODE_FAIL, then PENDING at its place), which waits, since a holds n1,
// until n2's agent says hello again at 400 s, and runs again from scratch there. The
// simulator's node failure at 160 s, repaired at 400 s, gives the same timeline.
TEST(LifecycleParityTest, ANodeFailureRequeuesItsJobUntilTheNodeIsBack) {
  Scenario scenario;
  scenario.nodes = {TestNode(1, "n1", "n1-"), TestNode(1, "n2", "n2-")};
  scenario.jobs = {TraceJobOf("a", 0, 1, 500, "alice"), TraceJobOf("b", 0, 1, 300, "alice")};
  scenario.outage = Outage{.node = 1, .silent_at = seconds(100), .back_at = seconds(400)};
  ExpectSameTimeline(scenario,
                     {Span(0, 500), {{seconds(0), seconds(160)}, {seconds(400), seconds(700)}}});
}

// One scripted scenario with every kind of event at once (issue #21's bar): arrivals and ends,
// a node failure, a preemption with the kill grace, and a dependency. Team a is guaranteed 2
// GPUs. b1 (team b, borrowed) takes n1's two GPUs and a0 (team a) n2's; d waits for a0 to
// complete. n2's agent falls silent at 100 s: at 160 s a0 is requeued and waits (b1 is younger
// than the minimum run time) until n2 is back at 400 s, and runs again from scratch until
// 700 s, which meets d's dependency: d runs on n2 from 700 s. a1 arrives at 700 s, finds team a
// within its guarantee, and preempts b1, which holds n1 through the 10 s grace; a1 runs from
// 710 s, and b1, requeued at its place, runs again once a1 has freed n1's GPU, at 810 s.
TEST(LifecycleParityTest, ArrivalsEndsANodeFailureAPreemptionWithGraceAndADependency) {
  Scenario scenario;
  scenario.nodes = {TestNode(2, "n1", "n1-"), TestNode(1, "n2", "n2-")};
  scenario.policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = 2}, TeamPolicy{.name = "b"}};
  scenario.kill_grace = seconds(10);
  sim::TraceJob d = TraceJobOf("d", 0, 1, 50, "alice", "a");
  d.after = {sim::TraceDependency{.job = "a0", .kind = DependencyKind::kOk}};
  scenario.jobs = {TraceJobOf("b1", 0, 2, 1000, "bob", "b"),
                   TraceJobOf("a0", 0, 1, 300, "alice", "a"),
                   d,
                   TraceJobOf("a1", 700, 1, 100, "alice", "a")};
  scenario.outage = Outage{.node = 1, .silent_at = seconds(100), .back_at = seconds(400)};
  ExpectSameTimeline(scenario,
                     {{{seconds(0), seconds(710)}, {seconds(810), seconds(1810)}},
                      {{seconds(0), seconds(160)}, {seconds(400), seconds(700)}},
                      Span(700, 750),
                      Span(710, 810)});
}

// Backfill onto a GPU a job's end freed waits for the full pass the pass rule owes a second
// later (decision 0004), in both: s starts on n2 at 31, not 30.
TEST(LifecycleParityTest, ArrivalsEndsAndBackfillAfterAnEnd) {
  ExpectSameTimeline(BackfillAfterAnEnd(seconds(0)),
                     {Span(0, 100), Span(0, 30), Span(100, 110), Span(31, 41)});
}

TEST(LifecycleParityTest, APreemptedJobIsRequeuedAndRunsAgain) {
  ExpectSameTimeline(PreemptionOfBorrowedGpus(seconds(0)),
                     {{{seconds(0), seconds(700)}, {seconds(800), seconds(1800)}}, Span(700, 800)});
}

// The same preemption with the product's kill grace: bob's job holds its GPUs, being stopped,
// for 10 s after its first signal; alice's starts when it has gone.
TEST(LifecycleParityTest, APreemptedJobHoldsItsGpusThroughTheKillGrace) {
  ExpectSameTimeline(PreemptionOfBorrowedGpus(seconds(10)),
                     {{{seconds(0), seconds(710)}, {seconds(810), seconds(1810)}}, Span(710, 810)});
}

// The backfill scenario with a launch lag of 2 s: each job's processes run 2 s after its start
// decision (its GPUs held from the decision), so every end, and what follows it, comes 2 s later
// than without: x ends at 32, s is backfilled at 33 and runs until 45; y ends at 102 and h runs
// from 104 to 114.
TEST(LifecycleParityTest, ALaunchLagDelaysEachRunAndWhatFollowsItsEnd) {
  ExpectSameTimeline(BackfillAfterAnEnd(seconds(2)),
                     {Span(0, 102), Span(0, 32), Span(102, 114), Span(33, 45)});
}

}  // namespace
}  // namespace gf
