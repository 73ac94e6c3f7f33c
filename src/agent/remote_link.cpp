#include "agent/remote_link.h"

#include <algorithm>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "api/agent_wire.h"
#include "json/json_text.h"

namespace gf {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// The least a report may take before the link counts as dead (however short the heartbeat).
constexpr std::chrono::milliseconds kMinReportTimeout{2000};

bool IsStaleSession(const Error& e) {
  return e.code == ErrorCode::kFailedPrecondition;
}

}  // namespace

RemoteLink::RemoteLink(RemoteLinkOptions options) : options_(std::move(options)) {}

RemoteLink::~RemoteLink() {
  Stop();
}

void RemoteLink::Attach(NodeAgent* agent, std::function<void()> say_hello_again) {
  agent_ = agent;
  say_hello_again_ = std::move(say_hello_again);
}

void RemoteLink::Start() {
  sender_ = std::thread([this] { SenderLoop(); });
  listener_ = std::thread([this] { ListenerLoop(); });
}

void RemoteLink::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  session_cv_.notify_all();
  listener_stop_.request_stop();
  if (sender_.joinable()) {
    sender_.join();
  }
  if (listener_.joinable()) {
    listener_.join();
  }
}

bool RemoteLink::Connected() const {
  std::lock_guard lock(mu_);
  return session_ != 0;
}

// ---- AgentReports: queue for the sender ----

void RemoteLink::OnAgentHello(AgentHello hello) {
  {
    std::lock_guard lock(mu_);
    hello_ = std::move(hello);
    session_ = 0;  // reports wait for the new session
  }
  cv_.notify_all();
}

void RemoteLink::OnJobStarted(JobId job, std::int64_t pid, Time start_time) {
  {
    std::lock_guard lock(mu_);
    batch_.started.push_back(JobStartReport{.job = job, .pid = pid, .start_time = start_time});
  }
  cv_.notify_all();
}

void RemoteLink::OnJobExited(JobExitReport report) {
  {
    std::lock_guard lock(mu_);
    unacknowledged_[report.job] = report;
    batch_.exited.push_back(std::move(report));
  }
  cv_.notify_all();
}

void RemoteLink::OnSamples(NodeId, std::vector<GpuSample> samples) {
  std::lock_guard lock(mu_);
  // Samples ride with the next report (at the latest the heartbeat); only the newest round is
  // worth sending, so a server that is away does not make them pile up.
  batch_.samples = std::move(samples);
}

void RemoteLink::OnPods(const NodeId&, std::vector<KubePod> pods) {
  std::lock_guard lock(mu_);
  // Like samples: each reading is complete, so the newest replaces one not sent yet.
  batch_.pods = std::move(pods);
}

// ---- The sender ----

std::chrono::milliseconds RemoteLink::Backoff(int failures) const {
  // Doubling from min to max, with up to 50% jitter so that a fleet of agents does not reconnect
  // in lockstep after a server restart.
  auto delay = options_.min_backoff;
  for (int i = 1; i < failures && delay < options_.max_backoff; ++i) {
    delay *= 2;
  }
  delay = std::min(delay, options_.max_backoff);
  thread_local std::minstd_rand rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> jitter(0, delay.count() / 2);
  return delay + std::chrono::milliseconds(jitter(rng));
}

void RemoteLink::SenderLoop() {
  ApiClient client(options_.servers, options_.client);
  int failures = 0;
  auto next_heartbeat = SteadyClock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const bool have_session = session_ != 0;
    const bool something = !batch_.started.empty() || !batch_.exited.empty();
    const bool reports_due = something || SteadyClock::now() >= next_heartbeat;
    const bool replies = !log_replies_.empty();
    if (!hello_ && !(have_session && (reports_due || replies))) {
      const auto until = have_session ? next_heartbeat : SteadyClock::now() + options_.max_backoff;
      cv_.wait_until(lock, until);
      continue;
    }
    bool ok = false;
    if (hello_) {
      AgentHello hello = *hello_;
      for (const auto& [id, exit] : unacknowledged_) {
        hello.ended.push_back(exit);
      }
      lock.unlock();
      ok = SayHello(client, hello);
      lock.lock();
    } else {
      lock.unlock();
      // Log replies first: a reader waits for them. They are no heartbeat, so the reports (or
      // the heartbeat) still go when due, however many reads come.
      SendLogReplies(client);
      ok = !reports_due || SendReports(client);
      lock.lock();
      if (!reports_due) {
        continue;
      }
    }
    if (ok) {
      failures = 0;
      next_heartbeat = SteadyClock::now() + session_info_.heartbeat;
      // A report is answered at once; one that takes three heartbeats is on a dead link (a
      // partition drops packets rather than refusing them): give up on it and reconnect,
      // instead of waiting out TCP's retransmissions.
      client.SetTimeout(std::clamp<std::chrono::milliseconds>(
          3 * session_info_.heartbeat, kMinReportTimeout, options_.client.timeout));
    } else {
      cv_.wait_for(lock, Backoff(++failures), [this] { return stopping_; });
    }
  }
}

bool RemoteLink::SayHello(ApiClient& client, const AgentHello& hello) {
  Result<json> answer = client.CallJson("POST", "/api/v1/agent/hello", AgentHelloToJson(hello));
  Result<AgentSession> session =
      answer.ok() ? AgentSessionFromJson(*answer) : Result<AgentSession>(answer.error());
  if (!session.ok()) {
    spdlog::warn("agent: hello to {}: {}", options_.servers, session.error().ToString());
    return false;
  }
  {
    std::lock_guard lock(mu_);
    hello_.reset();
    session_ = session->session;
    session_info_ = *session;
    // Command numbers are the session's: what was done under the last one (maybe another
    // server's) says nothing about this one's outbox.
    done_seq_ = 0;
  }
  spdlog::info("agent: joined {} (session {}, heartbeat {} ms)",
               client.endpoint(),
               session->session,
               session->heartbeat.count());
  session_cv_.notify_all();
  return true;
}

bool RemoteLink::SendReports(ApiClient& client) {
  AgentReportBatch batch;
  std::int64_t session = 0;
  {
    std::lock_guard lock(mu_);
    batch = std::move(batch_);
    batch_ = AgentReportBatch{};
    batch.done_seq = done_seq_;
    session = session_;
  }
  Result<json> answer = client.CallJson("POST",
                                        "/api/v1/agent/reports?session=" + std::to_string(session),
                                        AgentReportBatchToJson(batch));
  if (answer.ok()) {
    return true;
  }
  spdlog::warn("agent: report to {}: {}", client.endpoint(), answer.error().ToString());
  {
    std::lock_guard lock(mu_);
    // Put the batch back in front of what came meanwhile (newer samples win).
    batch.started.insert(batch.started.end(), batch_.started.begin(), batch_.started.end());
    batch.exited.insert(batch.exited.end(), batch_.exited.begin(), batch_.exited.end());
    if (!batch_.samples.empty()) {
      batch.samples = std::move(batch_.samples);
    }
    if (batch_.pods) {
      batch.pods = std::move(batch_.pods);
    }
    batch_ = std::move(batch);
    if (IsStaleSession(answer.error()) && session_ == session) {
      session_ = 0;
    }
  }
  if (IsStaleSession(answer.error()) && say_hello_again_) {
    // The started/exited reports above stay queued: the new hello lists the running jobs and
    // the unacknowledged exits, and the server ignores what it has already applied.
    say_hello_again_();
  }
  return false;
}

void RemoteLink::SendLogReplies(ApiClient& client) {
  std::deque<std::pair<std::int64_t, AgentLogReply>> replies;
  {
    std::lock_guard lock(mu_);
    replies.swap(log_replies_);
  }
  for (auto& [session, reply] : replies) {
    Result<json> answer = client.CallJson("POST",
                                          "/api/v1/agent/logs?session=" + std::to_string(session),
                                          AgentLogReplyToJson(reply));
    // Not sent again: the reader gives up after its timeout anyway, and a stale session or a
    // read that timed out (kNotFound) has nobody waiting.
    if (!answer.ok()) {
      spdlog::warn("agent: log reply {} to {}: {}",
                   reply.request,
                   client.endpoint(),
                   answer.error().ToString());
    }
  }
}

// ---- The listener ----

void RemoteLink::ListenerLoop() {
  ApiClient client(options_.servers, options_.client);
  int failures = 0;
  std::int64_t after = 0;
  std::int64_t streamed_session = 0;
  while (true) {
    std::int64_t session = 0;
    {
      std::unique_lock lock(mu_);
      session_cv_.wait(lock, [this] { return stopping_ || session_ != 0; });
      if (stopping_) {
        return;
      }
      session = session_;
    }
    if (session != streamed_session) {
      streamed_session = session;
      after = 0;  // a new session's outbox starts empty; its seqs are all new
    }
    const std::string target = "/api/v1/agent/commands?session=" + std::to_string(session) +
                               "&after=" + std::to_string(after);
    bool got_any = false;
    Status s = client.Watch(
        target,
        [&](std::string_view event, std::string_view data) {
          if (event != "command") {
            return true;
          }
          got_any = true;
          Result<json> body = ParseJsonText(data, "command from the server");
          Result<AgentCommand> command =
              body.ok() ? AgentCommandFromJson(*body) : Result<AgentCommand>(body.error());
          if (!command.ok()) {
            spdlog::error("agent: bad command from the server: {}", command.error().ToString());
            return true;
          }
          after = std::max(after, command->seq);
          Dispatch(*command, session);
          return true;
        },
        listener_stop_.get_token());
    if (listener_stop_.stop_requested()) {
      return;
    }
    if (!s.ok()) {
      spdlog::warn("agent: command stream from {}: {}", client.endpoint(), s.error().ToString());
      failures = got_any ? 1 : failures + 1;
      std::unique_lock lock(mu_);
      if (IsStaleSession(s.error()) && session_ == session) {
        lock.unlock();
        if (say_hello_again_) {
          say_hello_again_();
        }
        lock.lock();
      }
      session_cv_.wait_for(lock, Backoff(failures), [this] { return stopping_; });
    } else if (got_any) {
      failures = 0;  // the server ended the stream: a newer session, or it stops
    } else {
      // Ended before any command: do not spin if the server keeps doing that.
      std::unique_lock lock(mu_);
      session_cv_.wait_for(lock, Backoff(++failures), [this] { return stopping_; });
    }
  }
}

void RemoteLink::Dispatch(const AgentCommand& command, std::int64_t session) {
  if (command.kind == AgentCommand::Kind::kReadLog) {
    // A question, not a state change: read now (a local file, bounded by the limit) and let the
    // sender post the answer; done_seq does not move (service/agent_link.h).
    AgentLogReply reply{.request = command.request, .chunk = agent_->ReadLog(command.log)};
    {
      std::lock_guard lock(mu_);
      log_replies_.emplace_back(session, std::move(reply));
      if (log_replies_.size() > kMaxQueuedLogReplies) {
        log_replies_.pop_front();  // a server that is away: its readers time out anyway
      }
    }
    cv_.notify_all();
    return;
  }
  if (command.kind == AgentCommand::Kind::kTerminal) {
    // Unnumbered too, and unanswered: a job that ended meanwhile has no terminal to type into,
    // and its client learns that from the job's state.
    Status written = agent_->WriteTerminal(command.job_id, command.terminal);
    if (!written.ok()) {
      spdlog::debug(
          "terminal input for job {}: {}", command.job_id.value(), written.error().ToString());
    }
    return;
  }
  switch (command.kind) {
    case AgentCommand::Kind::kLaunch:
      if (command.job) {
        agent_->Launch(*command.job);
      }
      break;
    case AgentCommand::Kind::kKill:
      agent_->Kill(command.job_id, command.grace, command.cause, command.first_signal);
      break;
    case AgentCommand::Kind::kSignal:
      agent_->Signal(command.job_id, command.signal);
      break;
    case AgentCommand::Kind::kAcknowledgeExit:
      agent_->AcknowledgeExit(command.job_id);
      break;
    case AgentCommand::Kind::kReadLog:
    case AgentCommand::Kind::kTerminal:
      break;  // handled above
    case AgentCommand::Kind::kResetGpuHealth:
      agent_->ResetGpuHealth(command.gpu);
      break;
    case AgentCommand::Kind::kKillProcess:
      agent_->KillProcess(command.job_id, command.pid, command.cause);
      break;
    case AgentCommand::Kind::kApplyMigLayout:
      agent_->ApplyMigLayout(command.gpu, command.mig_profiles);
      break;
    case AgentCommand::Kind::kKeepGpusReady:
      agent_->KeepGpusReady(command.ready_gpus);
      break;
  }
  std::lock_guard lock(mu_);
  if (command.kind == AgentCommand::Kind::kAcknowledgeExit) {
    unacknowledged_.erase(command.job_id);
  }
  if (session == session_) {  // a stream of an older session still draining says nothing
    done_seq_ = std::max(done_seq_, command.seq);
  }
}

}  // namespace gf
