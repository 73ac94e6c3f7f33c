#include "controller/agent_hub.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <iterator>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "controller/authorization.h"

namespace gf {

// The NodeAgent of one remote node: an outbox of numbered commands, read by the command stream
// of the node's current session. Its own mutex: the controller thread pushes, API workers take.
//
// Log reads (ReadLog, from API workers) are questions, kept apart from the outbox: a read_log
// command waits in reads_ until a stream of the current session takes it (once), and its reader
// waits in waiting_ for the agent's LogReply, up to log_timeout. A new session, or the hub's
// Close, drops both and fails the readers: a read is never replayed to another session.
// Terminal input (WriteTerminal) waits in reads_ the same way, with no reader to answer.
class RemoteAgent final : public NodeAgent {
 public:
  RemoteAgent(NodeId node, std::size_t max_outbox, std::chrono::milliseconds log_timeout)
      : node_(std::move(node)), max_outbox_(max_outbox), log_timeout_(log_timeout) {}

  // NodeAgent (controller thread).
  void Launch(const Job& job) override {
    Push(AgentCommand{.kind = AgentCommand::Kind::kLaunch, .job = job, .job_id = job.id});
  }
  void Kill(JobId job,
            std::chrono::seconds grace,
            const std::string& cause,
            int first_signal) override {
    Push(AgentCommand{.kind = AgentCommand::Kind::kKill,
                      .job_id = job,
                      .grace = grace,
                      .cause = cause,
                      .first_signal = first_signal});
  }
  void Signal(JobId job, int sig) override {
    Push(AgentCommand{.kind = AgentCommand::Kind::kSignal, .job_id = job, .signal = sig});
  }
  void AcknowledgeExit(JobId job) override {
    Push(AgentCommand{.kind = AgentCommand::Kind::kAcknowledgeExit, .job_id = job});
  }
  void ResetGpuHealth(const GpuUuid& uuid) override {
    Push(AgentCommand{.kind = AgentCommand::Kind::kResetGpuHealth, .gpu = uuid});
  }
  void KillProcess(JobId job, std::uint32_t pid, const std::string& cause) override {
    Push(AgentCommand{
        .kind = AgentCommand::Kind::kKillProcess, .job_id = job, .cause = cause, .pid = pid});
  }
  void ApplyMigLayout(const GpuUuid& gpu, const std::vector<std::string>& profiles) override {
    Push(AgentCommand{
        .kind = AgentCommand::Kind::kApplyMigLayout, .gpu = gpu, .mig_profiles = profiles});
  }
  void KeepGpusReady(std::optional<int> gpus) override {
    Push(AgentCommand{.kind = AgentCommand::Kind::kKeepGpusReady, .ready_gpus = gpus});
  }
  // No current session: reports and streams of the old one are stale (the agent says hello).
  void EndSession() override { NewSession(0); }
  // The job's files are on the node's own disk, in its agent's run dir (from the hello), laid
  // out as the executor lays them out (executor/job_files.h; the e2e cluster test reads one).
  std::string LogPath(JobId job, bool stderr_stream) const override {
    std::lock_guard lock(mu_);
    return run_dir_ + "/" + std::to_string(job.value()) +
           (stderr_stream ? "/stderr.log" : "/stdout.log");
  }
  void SetRunDir(std::string run_dir) {
    std::lock_guard lock(mu_);
    run_dir_ = std::move(run_dir);
  }

  // API worker: a read_log command to the current session's stream, then a wait for its reply.
  Result<LogChunk> ReadLog(const LogRequest& request) override {
    const std::string where = LogPath(request.job, request.stream == LogStream::kStderr);
    LogRequest capped = request;
    capped.limit = std::min(request.limit, kMaxRemoteLogChunkBytes);
    std::int64_t id = 0;
    std::vector<std::function<void()>> wake;
    // Held here too, so that dropping it from waiting_ at a timeout does not break the promise.
    const Waiter waiter = std::make_shared<std::promise<Result<LogChunk>>>();
    std::future<Result<LogChunk>> answer = waiter->get_future();
    {
      std::lock_guard lock(mu_);
      if (session_ <= 0 || open_streams_ == 0) {
        return Unavailable("node " + node_.value() + ": its agent is not connected now (it is " +
                           "reconnecting, or gone); the job's output is on that node in " + where +
                           "; try again once `gpufleet nodes` shows the node up");
      }
      id = next_request_++;
      waiting_.emplace(id, waiter);
      reads_.push_back(AgentCommand{.kind = AgentCommand::Kind::kReadLog,
                                    .job_id = request.job,
                                    .request = id,
                                    .log = capped});
      wake = TakeWakersLocked();
    }
    CallAll(wake);
    if (answer.wait_for(log_timeout_) != std::future_status::ready) {
      {
        std::lock_guard lock(mu_);
        waiting_.erase(id);
        std::erase_if(reads_, [id](const AgentCommand& c) { return c.request == id; });
      }
      // The reply may have come between the wait and the erase: then it is here.
      if (answer.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        return Unavailable("node " + node_.value() + ": its agent did not answer a read of " +
                           "job " + std::to_string(request.job.value()) + "'s output within " +
                           std::to_string(log_timeout_.count()) + " ms (the node or its " +
                           "link is slow or stuck); the output is on that node in " + where +
                           "; try again");
      }
    }
    return answer.get();
  }

  // API worker: the keystrokes go out with the reads (once, never replayed); nothing waits for
  // the node. A user's typing outruns nothing here: one message per client request.
  Status WriteTerminal(JobId job, const TerminalInput& input) override {
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard lock(mu_);
      if (session_ <= 0 || open_streams_ == 0) {
        return Unavailable("node " + node_.value() + ": its agent is not connected now (it is " +
                           "reconnecting, or gone); job " + std::to_string(job.value()) +
                           "'s terminal cannot be reached");
      }
      if (reads_.size() >= kMaxWaitingQuestions) {
        return Unavailable("node " + node_.value() + ": its agent is not taking commands (" +
                           std::to_string(reads_.size()) + " wait); try again");
      }
      reads_.push_back(
          AgentCommand{.kind = AgentCommand::Kind::kTerminal, .job_id = job, .terminal = input});
      wake = TakeWakersLocked();
    }
    CallAll(wake);
    return OkStatus();
  }

  // The agent's reply (AgentHub::LogReply): completes the read that waits for it.
  Status CompleteRead(AgentLogReply reply) {
    Waiter waiter;
    {
      std::lock_guard lock(mu_);
      auto it = waiting_.find(reply.request);
      if (it == waiting_.end()) {
        return NotFound("no log read " + std::to_string(reply.request) + " waits on node " +
                        node_.value() + " (it timed out, or the session changed)");
      }
      waiter = std::move(it->second);
      waiting_.erase(it);
    }
    waiter->set_value(std::move(reply.chunk));
    return OkStatus();
  }

  // A new session: older streams end, the outbox starts empty (see agent_hub.h), and reads
  // waiting on the older session fail (session -1: the hub is closing).
  void NewSession(std::int64_t session) {
    std::map<std::int64_t, Waiter> failed;
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard lock(mu_);
      session_ = session;
      outbox_.clear();
      reads_.clear();
      failed.swap(waiting_);
      open_streams_ = 0;
      wake = TakeWakersLocked();
    }
    const std::string why =
        session < 0 ? "the server is stopping"
        : session == 0
            ? "node " + node_.value() + " is down: its agent must reconnect"
            : "node " + node_.value() + ": its agent reconnected during the read; try again";
    for (auto& [id, waiter] : failed) {
      waiter->set_value(Unavailable(why));
    }
    CallAll(wake);
  }
  // A stream of `session` opened or closed: reads go only to a node with a stream open.
  void StreamOpened(std::int64_t session) {
    std::lock_guard lock(mu_);
    if (session == session_) {
      ++open_streams_;
    }
  }
  void StreamClosed(std::int64_t session) {
    std::lock_guard lock(mu_);
    if (session == session_ && open_streams_ > 0) {
      --open_streams_;
    }
  }
  void Forget(std::int64_t done_seq) {
    std::lock_guard lock(mu_);
    while (!outbox_.empty() && outbox_.front().seq <= done_seq) {
      outbox_.pop_front();
    }
  }
  void CloseAll() { NewSession(-1); }

  // For the session's streams.
  struct Cursor {
    std::int64_t session;
    std::int64_t after;
    std::function<void()> wake;  // armed: call when something new arrives
  };
  std::vector<AgentCommand> TakeAfter(std::int64_t session, std::int64_t& after) {
    std::lock_guard lock(mu_);
    std::vector<AgentCommand> out;
    if (session != session_) {
      return out;
    }
    for (const AgentCommand& c : outbox_) {
      if (c.seq > after) {
        out.push_back(c);
      }
    }
    if (!out.empty()) {
      after = out.back().seq;
    }
    // Reads go out once, to whichever stream of the session takes first; they have no seq.
    out.insert(
        out.end(), std::make_move_iterator(reads_.begin()), std::make_move_iterator(reads_.end()));
    reads_.clear();
    return out;
  }
  bool IsCurrent(std::int64_t session) const {
    std::lock_guard lock(mu_);
    return session == session_;
  }
  // Arms a one-shot waker: called at the next push or session change.
  void Arm(std::function<void()> wake) {
    std::lock_guard lock(mu_);
    wakers_.push_back(std::move(wake));
  }

  const NodeId& node() const { return node_; }  // NOLINT(readability-identifier-naming)

 private:
  void Push(AgentCommand command) {
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard lock(mu_);
      command.seq = next_seq_++;
      outbox_.push_back(std::move(command));
      if (outbox_.size() > max_outbox_) {
        outbox_.pop_front();
      }
      wake = TakeWakersLocked();
    }
    CallAll(wake);
  }
  // The armed wakers are taken with the change they announce (under one lock), and called
  // outside it (a waker may take at once).
  std::vector<std::function<void()>> TakeWakersLocked() {
    std::vector<std::function<void()>> out;
    out.swap(wakers_);
    return out;
  }
  static void CallAll(std::vector<std::function<void()>>& wake) {
    for (auto& w : wake) {
      w();
    }
  }

  using Waiter = std::shared_ptr<std::promise<Result<LogChunk>>>;

  const NodeId node_;
  const std::size_t max_outbox_;
  const std::chrono::milliseconds log_timeout_;
  mutable std::mutex mu_;
  std::int64_t session_ = 0;                   // GUARDED_BY(mu_); -1 = closed for good
  std::int64_t next_seq_ = 1;                  // GUARDED_BY(mu_)
  std::deque<AgentCommand> outbox_;            // GUARDED_BY(mu_)
  std::vector<std::function<void()>> wakers_;  // GUARDED_BY(mu_)
  std::string run_dir_;                        // GUARDED_BY(mu_)
  int open_streams_ = 0;                       // GUARDED_BY(mu_): of the current session
  std::int64_t next_request_ = 1;              // GUARDED_BY(mu_)
  std::deque<AgentCommand> reads_;             // GUARDED_BY(mu_): read_log, terminal not yet taken
  static constexpr std::size_t kMaxWaitingQuestions = 1024;
  std::map<std::int64_t, Waiter> waiting_;  // GUARDED_BY(mu_): request → its reader
};

namespace {

// One open stream of a session's commands.
class RemoteCommandStream final : public CommandStream {
 public:
  RemoteCommandStream(RemoteAgent& agent, std::int64_t session, std::int64_t after)
      : agent_(agent), session_(session), after_(after) {
    agent_.StreamOpened(session_);
  }
  ~RemoteCommandStream() override {
    agent_.StreamClosed(session_);
    std::lock_guard lock(waker_->mu);
    waker_->wake.reset();  // a call armed at the agent and fired later finds nothing to call
  }
  RemoteCommandStream(const RemoteCommandStream&) = delete;
  RemoteCommandStream& operator=(const RemoteCommandStream&) = delete;

  std::vector<AgentCommand> Take() override {
    std::vector<AgentCommand> out;
    {
      std::lock_guard lock(mu_);
      out = agent_.TakeAfter(session_, after_);
    }
    Rearm();
    return out;
  }
  bool Closed() const override { return !agent_.IsCurrent(session_); }
  void SetWaker(std::function<void()> wake) override {
    {
      std::lock_guard lock(waker_->mu);
      waker_->wake = std::make_shared<const std::function<void()>>(std::move(wake));
    }
    Rearm();
  }

 private:
  // What a call armed at the agent reaches: the writer's waker, while the stream lives.
  struct Waker {
    std::mutex mu;
    std::shared_ptr<const std::function<void()>> wake;  // GUARDED_BY(mu); null once gone
    std::atomic<bool> armed{false};  // a call is armed at the agent and has not fired yet
  };

  // The agent's wakers are one-shot: arm again after each take, so a push between the take and
  // the arm is not missed (the writer then takes once more and finds it). At most one call is
  // armed at a time: a writer that takes with nothing new (every keepalive) must not pile up
  // calls that all fire at the next push. The call clears `armed` before it wakes the writer,
  // so the take that answers it arms the next one. The waker runs outside the lock, so it may
  // take, or drop the stream, at once.
  void Rearm() {
    if (waker_->armed.exchange(true)) {
      return;
    }
    agent_.Arm([waker = waker_] {
      waker->armed.store(false);
      std::shared_ptr<const std::function<void()>> wake;
      {
        std::lock_guard lock(waker->mu);
        wake = waker->wake;
      }
      if (wake) {
        (*wake)();
      }
    });
  }

  RemoteAgent& agent_;
  const std::int64_t session_;
  std::mutex mu_;
  std::int64_t after_;  // GUARDED_BY(mu_)
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
};

}  // namespace

Status CheckNodeCaller(const Caller& caller, const NodeId& node) {
  const bool its_node = caller.node && (caller.node->value().empty() || *caller.node == node);
  if (Allows(caller,
             Resource::kAgentLink,
             Action::kUse,
             its_node ? Ownership::kOwn : Ownership::kOther)) {
    return OkStatus();  // its node token; or an admin, e.g. root running an agent on this machine
  }
  if (!caller.node) {
    return PermissionDenied(
        "the agent link needs a node token (gpufleet node token create) or an admin (root on "
        "the server's socket is one)");
  }
  return PermissionDenied("this node token is for node '" + caller.node->value() + "', not '" +
                          node.value() + "'");
}

namespace {

// A random start for session numbers, in [2^20, 2^52): room for a billion sessions after it
// before int64 overflows, and a one-in-2^32 chance that two servers' ranges meet at all.
std::int64_t RandomSessionBase() {
  std::random_device random;
  const std::uint64_t bits = (std::uint64_t{random()} << 32) | random();
  return static_cast<std::int64_t>((bits % (std::uint64_t{1} << 32)) << 20);
}

}  // namespace

AgentHub::AgentHub(AgentReports& reports, AttachFn attach, AgentHubOptions options)
    : reports_(reports),
      attach_(std::move(attach)),
      options_(options),
      next_session_(RandomSessionBase() + 1) {}

AgentHub::~AgentHub() {
  Close();
}

void AgentHub::Close() {
  std::vector<RemoteAgent*> agents;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [name, agent] : agents_) {
      agents.push_back(agent.get());
    }
  }
  for (RemoteAgent* agent : agents) {
    agent->CloseAll();
  }
}

Result<AgentSession> AgentHub::Hello(const Caller& caller, AgentHello hello) {
  if (hello.node.name.value().empty()) {
    return InvalidArgument("node.name: empty; give the node a name (gpufleet agent --node-name)");
  }
  for (const auto& [key, value] : hello.node.labels) {
    GF_TRY(ValidateLabel(key, value, "node.labels"));
  }
  GF_TRY(CheckNodeCaller(caller, hello.node.name));
  std::int64_t session = 0;
  {
    // All under mu_, so that two hellos of one node (an agent retrying) cannot interleave:
    // their session numbers, the attach (the controller must have the agent before it acts on
    // a hello) and the hellos' order at the controller (the current session's comes last).
    // attach_ and OnAgentHello only queue work for the controller: they do not block.
    std::lock_guard lock(mu_);
    if (closed_) {
      return Unavailable("the server is stopping");
    }
    auto& slot = agents_[hello.node.name];
    const bool first = !slot;
    if (first) {
      slot =
          std::make_unique<RemoteAgent>(hello.node.name, options_.max_outbox, options_.log_timeout);
    }
    RemoteAgent* agent = slot.get();
    session = next_session_++;
    std::erase_if(sessions_, [&](const auto& s) { return s.second == hello.node.name; });
    sessions_[session] = hello.node.name;
    agent->NewSession(session);
    agent->SetRunDir(hello.run_dir);
    if (first) {
      attach_(hello.node.name, agent);
    }
    reports_.OnAgentHello(std::move(hello));
  }
  return AgentSession{
      .session = session, .heartbeat = options_.heartbeat, .node_timeout = options_.node_timeout};
}

Result<RemoteAgent*> AgentHub::SessionAgent(const Caller& caller, std::int64_t session) {
  RemoteAgent* agent = nullptr;
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      return Unavailable("the server is stopping");
    }
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
      return FailedPrecondition("stale session " + std::to_string(session) +
                                ": say hello again (POST /api/v1/agent/hello)");
    }
    agent = agents_.at(it->second).get();
  }
  if (!agent->IsCurrent(session)) {  // the controller ended it (EndSession: node down)
    return FailedPrecondition("stale session " + std::to_string(session) +
                              ": the node was taken down; say hello again "
                              "(POST /api/v1/agent/hello)");
  }
  GF_TRY(CheckNodeCaller(caller, agent->node()));
  return agent;
}

Status AgentHub::Report(const Caller& caller, std::int64_t session, AgentReportBatch batch) {
  GF_ASSIGN_OR_RETURN(RemoteAgent * agent, SessionAgent(caller, session));
  agent->Forget(batch.done_seq);
  for (const JobStartReport& s : batch.started) {
    reports_.OnJobStarted(s.job, s.pid, s.start_time);
  }
  for (JobExitReport& e : batch.exited) {
    e.node = agent->node();  // what the agent says of itself does not count
    reports_.OnJobExited(std::move(e));
  }
  if (!batch.samples.empty()) {
    reports_.OnSamples(agent->node(), std::move(batch.samples));
  }
  if (batch.pods) {
    reports_.OnPods(agent->node(), std::move(*batch.pods));
  }
  reports_.OnAgentHeartbeat(agent->node());
  return OkStatus();
}

Status AgentHub::LogReply(const Caller& caller, std::int64_t session, AgentLogReply reply) {
  GF_ASSIGN_OR_RETURN(RemoteAgent * agent, SessionAgent(caller, session));
  return agent->CompleteRead(std::move(reply));
}

Result<std::shared_ptr<CommandStream>> AgentHub::Commands(const Caller& caller,
                                                          std::int64_t session,
                                                          std::int64_t after) {
  GF_ASSIGN_OR_RETURN(RemoteAgent * agent, SessionAgent(caller, session));
  return std::shared_ptr<CommandStream>(
      std::make_shared<RemoteCommandStream>(*agent, session, after));
}

}  // namespace gf
