// AgentHub (agent_hub.h): sessions, the per-node outbox behind the NodeAgent the controller
// drives, command streams and their wakers, who may speak for a node, and shutdown. The
// controller is played by a recording AgentReports and attach function.
#include "controller/agent_hub.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What the hub handed the controller. The hub calls it on the caller's thread; the mutex is for
// the test that reports from another thread.
class RecordingReports final : public AgentReports {
 public:
  void OnAgentHello(AgentHello hello) override {
    std::lock_guard lock(mu_);
    hellos.push_back(std::move(hello));
  }
  void OnJobStarted(JobId job, std::int64_t pid, Time /*start_time*/) override {
    std::lock_guard lock(mu_);
    started.emplace_back(job, pid);
  }
  void OnJobExited(JobExitReport report) override {
    std::lock_guard lock(mu_);
    exited.push_back(std::move(report));
  }
  void OnSamples(NodeId node, std::vector<GpuSample> samples) override {
    std::lock_guard lock(mu_);
    samples_of[node] += samples.size();
  }
  void OnAgentHeartbeat(const NodeId& node) override {
    std::lock_guard lock(mu_);
    heartbeats.push_back(node);
  }

  std::vector<AgentHello> hellos;
  std::vector<std::pair<JobId, std::int64_t>> started;
  std::vector<JobExitReport> exited;
  std::map<NodeId, std::size_t> samples_of;
  std::vector<NodeId> heartbeats;

 private:
  std::mutex mu_;
};

// Counts a stream's wake-ups, and lets a thread wait for the next one.
class WakeCounter {
 public:
  std::function<void()> Waker() {
    return [this] {
      std::lock_guard lock(mu_);
      ++count_;
      cv_.notify_all();
    };
  }
  int count() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return count_;
  }
  // Waits (up to 10 s) until the count passes `seen`; returns the count.
  int WaitPast(int seen) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, seconds(10), [&] { return count_ > seen; });
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

const Caller kRoot{.authenticated = true, .uid = 0, .gid = 0, .user = "root"};
const Caller kAlice{.authenticated = true, .uid = 1000, .gid = 1000, .user = "alice"};
const Caller kAliceAdmin{
    .authenticated = true, .uid = 1000, .gid = 1000, .user = "alice", .role = Role::kAdmin};
const Caller kUnauthenticated{};

Caller NodeToken(std::string node) {
  return Caller{.authenticated = false,
                .uid = 0,
                .gid = 0,
                .user = "",
                .role = Role::kUser,
                .node = NodeId(std::move(node))};
}

AgentHello HelloOf(std::string node, std::vector<JobId> running = {}) {
  Node n;
  n.name = NodeId(std::move(node));
  n.labels = {{"rack", "a"}};
  return AgentHello{.node = n,
                    .running = std::move(running),
                    .ended = {},
                    .run_dir = "/run/agent-" + n.name.value()};
}

Job JobOn(std::int64_t id, const std::string& node) {
  Job job;
  job.id = JobId(id);
  job.spec.argv = {"true"};
  job.allocation = Allocation{.node = NodeId(node), .gpus = {}};
  return job;
}

class AgentHubTest : public ::testing::Test {
 protected:
  explicit AgentHubTest(AgentHubOptions options = {.heartbeat = milliseconds(1500),
                                                   .node_timeout = milliseconds(7000)})
      : hub_(
            reports_,
            [this](const NodeId& node, NodeAgent* agent) {
              std::lock_guard lock(attach_mu_);
              attached_.emplace_back(node, agent);
            },
            options) {}

  std::int64_t SessionOf(const std::string& node, const Caller& caller = kRoot) {
    Result<AgentSession> session = hub_.Hello(caller, HelloOf(node));
    EXPECT_TRUE(session.ok()) << session.error().ToString();
    return session.ok() ? session->session : 0;
  }
  NodeAgent* AgentOf(const std::string& node) {
    std::lock_guard lock(attach_mu_);
    for (const auto& [name, agent] : attached_) {
      if (name == NodeId(node)) {
        return agent;
      }
    }
    ADD_FAILURE() << "node " << node << " was never attached";
    return nullptr;
  }
  std::shared_ptr<CommandStream> Stream(std::int64_t session, std::int64_t after) {
    auto stream = hub_.Commands(kRoot, session, after);
    EXPECT_TRUE(stream.ok()) << stream.error().ToString();
    return stream.ok() ? *stream : nullptr;
  }

  RecordingReports reports_;
  std::mutex attach_mu_;
  std::vector<std::pair<NodeId, NodeAgent*>> attached_;
  AgentHub hub_;
};

// Polls `pred` for at most `limit`: for what must NOT happen, where only time can tell.
template <typename Pred>
void WaitForOrTimeout(Pred pred, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
}

std::vector<std::int64_t> Seqs(const std::vector<AgentCommand>& commands) {
  std::vector<std::int64_t> out;
  out.reserve(commands.size());
  for (const AgentCommand& c : commands) {
    out.push_back(c.seq);
  }
  return out;
}

TEST_F(AgentHubTest, FirstHelloAttachesOnceAndSessionsIncrease) {
  Result<AgentSession> first = hub_.Hello(kRoot, HelloOf("n1", {JobId(4)}));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_GT(first->session, 0);
  EXPECT_EQ(first->heartbeat, milliseconds(1500));
  EXPECT_EQ(first->node_timeout, milliseconds(7000));
  ASSERT_EQ(attached_.size(), 1u);
  EXPECT_EQ(attached_[0].first, NodeId("n1"));
  EXPECT_NE(attached_[0].second, nullptr);

  const std::int64_t second = SessionOf("n1");
  const std::int64_t other = SessionOf("n2");
  EXPECT_GT(second, first->session);
  EXPECT_GT(other, second);
  ASSERT_EQ(attached_.size(), 2u);  // n1 once, n2 once
  EXPECT_EQ(attached_[1].first, NodeId("n2"));
  ASSERT_EQ(reports_.hellos.size(), 3u);  // every hello reaches the controller
  EXPECT_EQ(reports_.hellos[0].running, std::vector<JobId>{JobId(4)});
  // The job files are in the run dir the hello named.
  EXPECT_EQ(AgentOf("n1")->LogPath(JobId(5), false), "/run/agent-n1/5/stdout.log");
  EXPECT_EQ(AgentOf("n1")->LogPath(JobId(5), true), "/run/agent-n1/5/stderr.log");
}

TEST_F(AgentHubTest, ANewHelloMakesTheOlderSessionStale) {
  const std::int64_t old_session = SessionOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> old_stream = Stream(old_session, 0);
  old_stream->SetWaker(wakes.Waker());
  AgentOf("n1")->AcknowledgeExit(JobId(1));
  EXPECT_EQ(wakes.count(), 1);
  EXPECT_EQ(old_stream->Take().size(), 1u);  // the writer answers each wake-up with a take
  EXPECT_FALSE(old_stream->Closed());
  AgentOf("n1")->AcknowledgeExit(JobId(2));  // taken, but never reported done
  EXPECT_EQ(old_stream->Take().size(), 1u);
  const int before = wakes.count();

  const std::int64_t new_session = SessionOf("n1");
  EXPECT_GT(wakes.count(), before);  // the writer learns that its stream ended
  EXPECT_TRUE(old_stream->Closed());
  EXPECT_TRUE(old_stream->Take().empty());

  Status report = hub_.Report(kRoot, old_session, AgentReportBatch{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(report.error().message.find("stale session"), std::string::npos)
      << report.error().message;
  auto stream = hub_.Commands(kRoot, old_session, 0);
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code, ErrorCode::kFailedPrecondition);

  // The new session starts with an empty outbox: the controller resends from the hello.
  EXPECT_TRUE(Stream(new_session, 0)->Take().empty());
  EXPECT_TRUE(hub_.Report(kRoot, new_session, AgentReportBatch{}).ok());
}

// A partition: the controller takes the node down while its agent's connection lives on. The
// agent's reports and stream on that session are refused until it says hello again, so that the
// hello reconciles the node first.
TEST_F(AgentHubTest, AnEndedSessionIsStaleUntilTheNextHello) {
  const std::int64_t session = SessionOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  stream->SetWaker(wakes.Waker());
  ASSERT_TRUE(hub_.Report(kRoot, session, AgentReportBatch{}).ok());

  AgentOf("n1")->EndSession();
  EXPECT_GT(wakes.count(), 0);  // the writer learns that its stream ended
  EXPECT_TRUE(stream->Closed());
  Status report = hub_.Report(kRoot, session, AgentReportBatch{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(report.error().message.find("stale session"), std::string::npos)
      << report.error().message;
  EXPECT_EQ(hub_.Commands(kRoot, session, 0).error().code, ErrorCode::kFailedPrecondition);

  const std::int64_t next = SessionOf("n1");
  EXPECT_TRUE(hub_.Report(kRoot, next, AgentReportBatch{}).ok());
}

TEST_F(AgentHubTest, CommandsComeOutInOrderAndAreForgottenOnceDone) {
  const std::int64_t session = SessionOf("n1");
  NodeAgent* agent = AgentOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  stream->SetWaker(wakes.Waker());
  EXPECT_TRUE(stream->Take().empty());

  agent->Launch(JobOn(7, "n1"));
  EXPECT_GE(wakes.count(), 1);  // on the push itself, not later
  std::vector<AgentCommand> first = stream->Take();
  agent->Kill(JobId(7), seconds(12), "cancelled by alice", 10);
  EXPECT_GE(wakes.count(), 2);
  agent->AcknowledgeExit(JobId(6));
  std::vector<AgentCommand> rest = stream->Take();
  EXPECT_TRUE(stream->Take().empty());  // each command is taken once

  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, AgentCommand::Kind::kLaunch);
  EXPECT_EQ(first[0].job_id, JobId(7));
  ASSERT_TRUE(first[0].job.has_value());
  EXPECT_EQ(first[0].job->allocation->node, NodeId("n1"));
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].kind, AgentCommand::Kind::kKill);
  EXPECT_EQ(rest[0].job_id, JobId(7));
  EXPECT_EQ(rest[0].grace, seconds(12));
  EXPECT_EQ(rest[0].cause, "cancelled by alice");
  EXPECT_EQ(rest[0].first_signal, 10);
  EXPECT_EQ(rest[1].kind, AgentCommand::Kind::kAcknowledgeExit);
  EXPECT_EQ(rest[1].job_id, JobId(6));
  const std::int64_t launch = first[0].seq;
  const std::int64_t kill = rest[0].seq;
  const std::int64_t ack = rest[1].seq;
  EXPECT_LT(launch, kill);
  EXPECT_LT(kill, ack);

  // A reconnecting stream starts after the last command its agent took.
  EXPECT_EQ(Seqs(Stream(session, launch)->Take()), (std::vector<std::int64_t>{kill, ack}));
  // Reported done: forgotten, even by a stream that asks for everything.
  ASSERT_TRUE(hub_.Report(kRoot, session, AgentReportBatch{.done_seq = kill}).ok());
  EXPECT_EQ(Seqs(Stream(session, 0)->Take()), std::vector<std::int64_t>{ack});
  ASSERT_TRUE(hub_.Report(kRoot, session, AgentReportBatch{.done_seq = ack}).ok());
  EXPECT_TRUE(Stream(session, 0)->Take().empty());
  // Numbers are never reused.
  agent->AcknowledgeExit(JobId(8));
  EXPECT_EQ(Seqs(stream->Take()), std::vector<std::int64_t>{ack + 1});
}

// A stream's waker is one-shot per change: taking (as the server does on every keepalive)
// without anything new must not pile up wake-ups that all fire at the next push.
TEST_F(AgentHubTest, IdleTakesDoNotMultiplyWakeUps) {
  const std::int64_t session = SessionOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  stream->SetWaker(wakes.Waker());
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(stream->Take().empty());
  }
  AgentOf("n1")->AcknowledgeExit(JobId(1));
  EXPECT_EQ(wakes.count(), 1);
  EXPECT_EQ(stream->Take().size(), 1u);
  AgentOf("n1")->AcknowledgeExit(JobId(2));
  EXPECT_EQ(wakes.count(), 2);
}

TEST_F(AgentHubTest, AGoneStreamIsNeverWoken) {
  const std::int64_t session = SessionOf("n1");
  WakeCounter wakes;
  {
    std::shared_ptr<CommandStream> stream = Stream(session, 0);
    stream->SetWaker(wakes.Waker());
    EXPECT_TRUE(stream->Take().empty());
  }
  AgentOf("n1")->AcknowledgeExit(JobId(1));
  SessionOf("n1");  // a session change wakes the streams that are still there
  EXPECT_EQ(wakes.count(), 0);
}

// A writer thread that sleeps until woken must see every command pushed from another thread,
// in order, whatever the interleaving of pushes, takes and re-arms.
TEST_F(AgentHubTest, AWokenWriterMissesNothing) {
  constexpr int kCommands = 2000;
  const std::int64_t session = SessionOf("n1");
  NodeAgent* agent = AgentOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  stream->SetWaker(wakes.Waker());
  std::thread pusher([agent] {
    for (int i = 1; i <= kCommands; ++i) {
      agent->AcknowledgeExit(JobId(i));
    }
  });
  std::vector<AgentCommand> received;
  int seen = 0;
  while (received.size() < kCommands) {
    std::vector<AgentCommand> got = stream->Take();
    if (got.empty()) {
      const int now = wakes.WaitPast(seen);
      if (now == seen) {
        break;  // no wake-up for 10 s although commands are missing: lost
      }
      seen = now;
    }
    received.insert(received.end(), got.begin(), got.end());
  }
  pusher.join();
  ASSERT_EQ(received.size(), static_cast<std::size_t>(kCommands));
  for (int i = 0; i < kCommands; ++i) {
    EXPECT_EQ(received[static_cast<std::size_t>(i)].job_id, JobId(i + 1));
    if (i > 0) {
      EXPECT_GT(received[static_cast<std::size_t>(i)].seq,
                received[static_cast<std::size_t>(i - 1)].seq);
    }
  }
}

TEST_F(AgentHubTest, ReportGoesToTheControllerStampedWithTheSessionsNode) {
  const std::int64_t session = SessionOf("n1");
  JobExitReport exit{.job = JobId(3),
                     .exit_code = 1,
                     .signal = std::nullopt,
                     .end_time = {},
                     .cause = "exited with status 1",
                     .node = NodeId("n9")};  // a lie
  GpuSample sample;
  sample.uuid = GpuUuid("GPU-0");
  AgentReportBatch batch{.started = {JobStartReport{.job = JobId(2), .pid = 77, .start_time = {}}},
                         .exited = {exit},
                         .samples = {sample, sample},
                         .done_seq = 0};
  ASSERT_TRUE(hub_.Report(NodeToken("n1"), session, batch).ok());
  ASSERT_EQ(reports_.started.size(), 1u);
  EXPECT_EQ(reports_.started[0], (std::pair<JobId, std::int64_t>{JobId(2), 77}));
  ASSERT_EQ(reports_.exited.size(), 1u);
  EXPECT_EQ(reports_.exited[0].node, NodeId("n1"));
  EXPECT_EQ(reports_.exited[0].job, JobId(3));
  EXPECT_EQ(reports_.samples_of[NodeId("n1")], 2u);
  EXPECT_EQ(reports_.samples_of.count(NodeId("n9")), 0u);
  // Every report is a heartbeat, an empty one too.
  ASSERT_TRUE(hub_.Report(kRoot, session, AgentReportBatch{}).ok());
  EXPECT_EQ(reports_.heartbeats, (std::vector<NodeId>{NodeId("n1"), NodeId("n1")}));
}

TEST(CheckNodeCallerTest, OnlyRootOrATokenForThatNode) {
  EXPECT_TRUE(CheckNodeCaller(kRoot, NodeId("n1")).ok());
  EXPECT_TRUE(CheckNodeCaller(NodeToken("n1"), NodeId("n1")).ok());
  EXPECT_TRUE(CheckNodeCaller(NodeToken(""), NodeId("n1")).ok());  // a join token: any node
  EXPECT_TRUE(CheckNodeCaller(NodeToken(""), NodeId("n2")).ok());
  for (const Caller& refused : {NodeToken("n2"), kAlice, kAliceAdmin, kUnauthenticated}) {
    Status s = CheckNodeCaller(refused, NodeId("n1"));
    ASSERT_FALSE(s.ok()) << refused.user;
    EXPECT_EQ(s.error().code, ErrorCode::kPermissionDenied);
  }
  Status other = CheckNodeCaller(NodeToken("n2"), NodeId("n1"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("'n2'"), std::string::npos) << other.error().message;
}

TEST_F(AgentHubTest, CallersAreCheckedOnEveryCall) {
  auto refused = hub_.Hello(NodeToken("n2"), HelloOf("n1"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_FALSE(hub_.Hello(kAlice, HelloOf("n1")).ok());
  EXPECT_TRUE(attached_.empty());  // nothing registered by a refused hello
  EXPECT_TRUE(reports_.hellos.empty());

  const std::int64_t session = SessionOf("n1", NodeToken("n1"));
  Status report = hub_.Report(NodeToken("n2"), session, AgentReportBatch{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, ErrorCode::kPermissionDenied);
  auto stream = hub_.Commands(kAlice, session, 0);
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code, ErrorCode::kPermissionDenied);
  EXPECT_TRUE(reports_.heartbeats.empty());
}

TEST_F(AgentHubTest, HelloNeedsANameAndValidLabels) {
  auto unnamed = hub_.Hello(kRoot, HelloOf(""));
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unnamed.error().message.find("node.name"), std::string::npos);
  AgentHello bad_label = HelloOf("n1");
  bad_label.node.labels = {{"rack", "a b"}};
  auto labelled = hub_.Hello(kRoot, bad_label);
  ASSERT_FALSE(labelled.ok());
  EXPECT_EQ(labelled.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(labelled.error().message.find("node.labels"), std::string::npos);
  EXPECT_TRUE(attached_.empty());
}

TEST_F(AgentHubTest, CloseEndsStreamsAndRefusesLaterCalls) {
  const std::int64_t session = SessionOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  stream->SetWaker(wakes.Waker());
  hub_.Close();
  EXPECT_TRUE(stream->Closed());
  EXPECT_EQ(wakes.count(), 1);
  const auto expect_unavailable = [](const auto& result) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ErrorCode::kUnavailable);
  };
  expect_unavailable(hub_.Hello(kRoot, HelloOf("n1")));
  expect_unavailable(hub_.Report(kRoot, session, AgentReportBatch{}));
  expect_unavailable(hub_.Commands(kRoot, session, 0));
}

// The controller must get a node's attach before any hello of it, and the hellos in session
// order: a hello handed over without its agent attached makes the controller act on no agent.
// Two hellos of one node race (an agent retrying its hello); the first one's attach is slow.
TEST(AgentHubOrderTest, HellosReachTheControllerAfterTheAttachAndInSessionOrder) {
  class OrderLog final : public AgentReports {
   public:
    void OnAgentHello(AgentHello hello) override { Add("hello " + hello.run_dir); }
    void OnJobStarted(JobId, std::int64_t, Time) override {}
    void OnJobExited(JobExitReport) override {}
    void OnSamples(NodeId, std::vector<GpuSample>) override {}
    void OnAgentHeartbeat(const NodeId&) override {}
    void Add(std::string entry) {
      std::lock_guard lock(mu_);
      entries_.push_back(std::move(entry));
    }
    std::vector<std::string> entries() {  // NOLINT(readability-identifier-naming): accessor
      std::lock_guard lock(mu_);
      return entries_;
    }

   private:
    std::mutex mu_;
    std::vector<std::string> entries_;
  };
  OrderLog log;
  std::promise<void> attaching;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  AgentHub hub(log, [&](const NodeId&, NodeAgent*) {
    attaching.set_value();
    released.wait();
    log.Add("attached");
  });
  AgentHello first = HelloOf("n1");
  first.run_dir = "first";
  AgentHello second = HelloOf("n1");
  second.run_dir = "second";
  std::int64_t first_session = 0;
  std::int64_t second_session = 0;
  std::thread one([&] { first_session = hub.Hello(kRoot, first)->session; });
  attaching.get_future().wait();
  std::thread two([&] { second_session = hub.Hello(kRoot, second)->session; });
  // Bounded: the second hello must not get through while the attach is under way; give it the
  // time it would need if it could.
  WaitForOrTimeout([&] { return !log.entries().empty(); }, milliseconds(300));
  release.set_value();
  one.join();
  two.join();
  ASSERT_LT(first_session, second_session);
  EXPECT_EQ(log.entries(), (std::vector<std::string>{"attached", "hello first", "hello second"}));
}

class SmallOutboxTest : public AgentHubTest {
 protected:
  SmallOutboxTest() : AgentHubTest(AgentHubOptions{.max_outbox = 2}) {}
};

TEST_F(SmallOutboxTest, AFullOutboxDropsTheOldestCommands) {
  const std::int64_t session = SessionOf("n1");
  for (int i = 1; i <= 3; ++i) {
    AgentOf("n1")->AcknowledgeExit(JobId(i));
  }
  std::vector<AgentCommand> kept = Stream(session, 0)->Take();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].job_id, JobId(2));
  EXPECT_EQ(kept[1].job_id, JobId(3));
}

// ---- Log reads (RemoteAgent::ReadLog): a read_log on the stream, answered by LogReply ----

// Starts a read on its own thread (ReadLog blocks until the reply or the timeout).
std::future<Result<LogChunk>> StartRead(NodeAgent* agent, LogRequest request) {
  return std::async(std::launch::async, [agent, request] { return agent->ReadLog(request); });
}

// Takes from `stream` until a read_log comes out (the reader's thread queues it soon).
std::optional<AgentCommand> NextRead(CommandStream& stream, WakeCounter& wakes) {
  int seen = wakes.count();
  for (int i = 0; i < 100; ++i) {
    for (AgentCommand& c : stream.Take()) {
      if (c.kind == AgentCommand::Kind::kReadLog) {
        return c;
      }
    }
    seen = wakes.WaitPast(seen);
  }
  return std::nullopt;
}

// A read of n1's output in flight: sent on the open stream of a fresh session of n1, taken from
// it (read), not yet answered.
struct ReadInFlight {
  std::unique_ptr<WakeCounter> wakes = std::make_unique<WakeCounter>();
  std::shared_ptr<CommandStream> stream;
  std::future<Result<LogChunk>> reader;
  std::optional<AgentCommand> read;  // as the stream gave it; nullopt if it never came
};

ReadInFlight SendRead(std::shared_ptr<CommandStream> stream, NodeAgent* agent, LogRequest request) {
  ReadInFlight r;
  r.stream = std::move(stream);
  r.stream->SetWaker(r.wakes->Waker());
  r.reader = StartRead(agent, request);
  r.read = NextRead(*r.stream, *r.wakes);
  return r;
}

TEST_F(AgentHubTest, AReadGoesOutOnceAndItsReplyCompletesTheReader) {
  const std::int64_t session = SessionOf("n1");
  WakeCounter wakes;
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  stream->SetWaker(wakes.Waker());
  AgentOf("n1")->AcknowledgeExit(JobId(1));  // seq 1, in the outbox
  auto reader = StartRead(
      AgentOf("n1"),
      LogRequest{.job = JobId(5), .stream = LogStream::kStderr, .offset = 10, .limit = 64 << 20});
  std::optional<AgentCommand> read = NextRead(*stream, wakes);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->seq, 0);  // not a numbered command: done_seq never covers it
  EXPECT_GT(read->request, 0);
  EXPECT_EQ(read->job_id, JobId(5));
  EXPECT_EQ(read->log.stream, LogStream::kStderr);
  EXPECT_EQ(read->log.offset, 10);
  EXPECT_EQ(read->log.limit, kMaxRemoteLogChunkBytes);  // capped: the reply must fit a request

  // Taken once: neither this stream nor a second one of the session gets it again, while the
  // outbox's commands are still there for a stream that starts over.
  EXPECT_TRUE(stream->Take().empty());
  EXPECT_EQ(Seqs(Stream(session, 0)->Take()), (std::vector<std::int64_t>{1}));

  ASSERT_TRUE(hub_.LogReply(kRoot,
                            session,
                            AgentLogReply{
                                .request = read->request,
                                .chunk = LogChunk{.data = "oops\n", .size = 15, .next_offset = 15}})
                  .ok());
  Result<LogChunk> chunk = reader.get();
  ASSERT_TRUE(chunk.ok()) << chunk.error().ToString();
  EXPECT_EQ(chunk->data, "oops\n");
  EXPECT_EQ(chunk->size, 15);
  EXPECT_EQ(chunk->next_offset, 15);

  // A second reply to the same read finds nobody waiting.
  Status again = hub_.LogReply(kRoot, session, AgentLogReply{.request = read->request});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
}

// `gpufleet run`'s keys: unnumbered, out once on the session's stream, never replayed to a
// stream that starts over; refused at once while the node has no stream.
TEST_F(AgentHubTest, TerminalInputGoesOutOnceAndIsNeverReplayed) {
  const std::int64_t session = SessionOf("n1");
  EXPECT_EQ(AgentOf("n1")->WriteTerminal(JobId(5), {.data = "x"}).error().code,
            ErrorCode::kUnavailable);  // no stream open yet
  std::shared_ptr<CommandStream> stream = Stream(session, 0);
  AgentOf("n1")->AcknowledgeExit(JobId(1));  // seq 1
  ASSERT_TRUE(
      AgentOf("n1")->WriteTerminal(JobId(5), {.data = "ls\n", .size = TerminalSize{24, 80}}).ok());
  std::vector<AgentCommand> taken = stream->Take();
  ASSERT_EQ(taken.size(), 2u);
  const AgentCommand& keys = taken[1];
  EXPECT_EQ(keys.kind, AgentCommand::Kind::kTerminal);
  EXPECT_EQ(keys.seq, 0);
  EXPECT_EQ(keys.job_id, JobId(5));
  EXPECT_EQ(keys.terminal.data, "ls\n");
  EXPECT_EQ(keys.terminal.size, (TerminalSize{24, 80}));
  EXPECT_TRUE(stream->Take().empty());
  EXPECT_EQ(Seqs(Stream(session, 0)->Take()), (std::vector<std::int64_t>{1}));  // keys not again
}

TEST_F(AgentHubTest, AnAgentsReadErrorReachesTheReader) {
  const std::int64_t session = SessionOf("n1");
  ReadInFlight r = SendRead(Stream(session, 0), AgentOf("n1"), {.job = JobId(5), .limit = 10});
  ASSERT_TRUE(r.read.has_value());
  ASSERT_TRUE(hub_.LogReply(kRoot,
                            session,
                            AgentLogReply{.request = r.read->request,
                                          .chunk = IoError("cannot read log x: denied")})
                  .ok());
  Result<LogChunk> chunk = r.reader.get();
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kIo);
  EXPECT_EQ(chunk.error().message, "cannot read log x: denied");
}

TEST_F(AgentHubTest, ANodeWithoutAStreamFailsAtOnceNamingTheFile) {
  SessionOf("n1");  // a session, but no command stream open (the agent is reconnecting)
  Result<LogChunk> chunk = AgentOf("n1")->ReadLog(LogRequest{.job = JobId(5), .limit = 10});
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(chunk.error().message.find("node n1: its agent is not connected"), std::string::npos)
      << chunk.error().message;
  EXPECT_NE(chunk.error().message.find("/run/agent-n1/5/stdout.log"), std::string::npos)
      << chunk.error().message;

  // A stream that opened and went away counts as none.
  const std::int64_t session = SessionOf("n1");
  Stream(session, 0).reset();
  EXPECT_FALSE(AgentOf("n1")->ReadLog(LogRequest{.job = JobId(5), .limit = 10}).ok());
}

TEST_F(AgentHubTest, ANewSessionFailsWaitingReadersAndNeverReplaysTheirReads) {
  const std::int64_t session = SessionOf("n1");
  ReadInFlight r = SendRead(Stream(session, 0), AgentOf("n1"), {.job = JobId(5), .limit = 10});
  ASSERT_TRUE(r.read.has_value());

  const std::int64_t next = SessionOf("n1");  // the agent reconnects
  Result<LogChunk> chunk = r.reader.get();
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(chunk.error().message.find("reconnected"), std::string::npos) << chunk.error().message;
  EXPECT_TRUE(Stream(next, 0)->Take().empty());  // the new session does not get the read
  // The old session's late answer is refused as stale.
  EXPECT_EQ(hub_.LogReply(kRoot, session, AgentLogReply{.request = r.read->request}).error().code,
            ErrorCode::kFailedPrecondition);
}

TEST_F(AgentHubTest, CloseFailsWaitingReaders) {
  const std::int64_t session = SessionOf("n1");
  ReadInFlight r = SendRead(Stream(session, 0), AgentOf("n1"), {.job = JobId(5), .limit = 10});
  ASSERT_TRUE(r.read.has_value());
  hub_.Close();
  Result<LogChunk> chunk = r.reader.get();
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(chunk.error().message.find("stopping"), std::string::npos) << chunk.error().message;
}

TEST_F(AgentHubTest, RepliesAreCheckedLikeReports) {
  const std::int64_t session = SessionOf("n1");
  EXPECT_EQ(hub_.LogReply(kAlice, session, AgentLogReply{.request = 1}).error().code,
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(hub_.LogReply(NodeToken("n2"), session, AgentLogReply{.request = 1}).error().code,
            ErrorCode::kPermissionDenied);
  EXPECT_EQ(hub_.LogReply(kRoot, session + 1000, AgentLogReply{.request = 1}).error().code,
            ErrorCode::kFailedPrecondition);
}

class ShortLogTimeoutTest : public AgentHubTest {
 protected:
  ShortLogTimeoutTest() : AgentHubTest(AgentHubOptions{.log_timeout = milliseconds(200)}) {}
};

TEST_F(ShortLogTimeoutTest, ASilentAgentTimesTheReaderOutNamingTheNodeAndFile) {
  const std::int64_t session = SessionOf("n1");
  ReadInFlight r = SendRead(Stream(session, 0), AgentOf("n1"), {.job = JobId(8), .limit = 10});
  ASSERT_TRUE(r.read.has_value());
  Result<LogChunk> chunk = r.reader.get();  // nobody answers
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(chunk.error().message.find("did not answer"), std::string::npos)
      << chunk.error().message;
  EXPECT_NE(chunk.error().message.find("within 200 ms"), std::string::npos)
      << chunk.error().message;
  EXPECT_NE(chunk.error().message.find("/run/agent-n1/8/stdout.log"), std::string::npos)
      << chunk.error().message;
  // Its answer, once late, finds nobody waiting.
  EXPECT_EQ(hub_.LogReply(kRoot, session, AgentLogReply{.request = r.read->request}).error().code,
            ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gf
