// AgentLinkService: the controller's side of the link with remote node agents (issue #6), as
// the API sees it. `gpufleet server` serves it under /api/v1/agent/ (docs/cluster.md):
//
//   agent                                   server
//   POST /agent/hello  {inventory, jobs} ─► Hello(): a new session of the node; its jobs are
//                                           reconciled (re-attached, finished, or orphans killed)
//   GET  /agent/commands?session=S&after=N  Commands(): a stream (server-sent events) of the
//        ◄─ launch / kill / signal / ack, each with a seq   node's commands after seq N
//   POST /agent/reports?session=S  ───────► Report(): started, exited, samples, and the last
//        (also every heartbeat, when idle)   command seq the agent has carried out
//   POST /agent/logs?session=S  ──────────► LogReply(): a chunk of a job's log, the answer to
//        (one per read_log command)          a read_log command (`gpufleet logs`)
//
// A session is one connection of one agent process: a new hello of the node ends the older
// session (its stream closes, its reports are refused with kFailedPrecondition "stale session",
// and the agent says hello again). Commands are idempotent at the agent (a launch of a job it
// already runs, a kill of a job it no longer has, a second ack are no-ops), so a command may be
// sent twice across a reconnect; the hello's reconciliation resends what a lost stream carried.
// A signal (kSignal) is the exception: delivering it twice is not a no-op, so it is never
// resent by a reconciliation, and a new session's empty outbox drops one not yet taken (the
// caller was told it was sent, as scancel --signal says, not that it arrived).
//
// Who may call: a node agent with a node token (Caller::node; a token bound to a node name may
// speak only for that node) or root on the Unix socket. Everyone else gets kPermissionDenied.
//
// Thread-safety: every method may be called from any API worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/gpu_sample.h"
#include "model/job.h"
#include "model/kube_pod.h"
#include "model/terminal.h"
#include "service/node_agent.h"
#include "service/service.h"

namespace gf {

// One instruction for an agent. Mirrors the NodeAgent methods.
//
// kReadLog (NodeAgent::ReadLog) is a question, not a state change: it has no seq (0), is not
// kept in the outbox (a stream hands it out once, and a new session drops it: it is never
// replayed), does not move done_seq, and its answer comes back as an AgentLogReply (POST
// /agent/logs) matched by `request`. kTerminal (NodeAgent::WriteTerminal) travels the same
// way, unanswered: keystrokes are not replayed into a later session, where they could be
// typed twice.
struct AgentCommand {
  enum class Kind {
    kLaunch,
    kKill,
    kAcknowledgeExit,
    kReadLog,
    kResetGpuHealth,
    kKillProcess,
    kApplyMigLayout,
    kKeepGpusReady,
    kTerminal,
    kSignal
  };
  std::int64_t seq = 0;  // increasing per node, never reused while the server runs; 0: kReadLog
  Kind kind = Kind::kLaunch;
  std::optional<Job> job{};  // kLaunch: the job as NodeAgent::Launch gets it
  JobId job_id{};            // kKill, kSignal, kAcknowledgeExit, kReadLog (and kLaunch: job->id)
  std::chrono::seconds grace{0};            // kKill
  std::string cause{};                      // kKill, kKillProcess
  int first_signal = 15;                    // kKill
  std::int64_t request = 0;                 // kReadLog: > 0, names the read in the agent's reply
  LogRequest log{};                         // kReadLog (log.job == job_id)
  GpuUuid gpu{};                            // kResetGpuHealth, kApplyMigLayout
  std::uint32_t pid = 0;                    // kKillProcess (with job_id and cause)
  std::vector<std::string> mig_profiles{};  // kApplyMigLayout: the layout ("3g.40gb", ...)
  std::optional<int> ready_gpus{};          // kKeepGpusReady: nullopt, no forecast
  TerminalInput terminal{};                 // kTerminal (with job_id)
  int signal = 0;                           // kSignal: the signal to deliver to the job
};

// The agent's answer to a kReadLog: the chunk, or why it could not read (kIo naming the file).
struct AgentLogReply {
  std::int64_t request = 0;
  Result<LogChunk> chunk = LogChunk{};
};

struct JobStartReport {
  JobId job{};
  std::int64_t pid = 0;
  Time start_time{};
};

// What an agent sends on one POST /agent/reports: everything that happened since its last one.
struct AgentReportBatch {
  std::vector<JobStartReport> started{};
  std::vector<JobExitReport> exited{};
  std::vector<GpuSample> samples{};
  // Kubernetes mode: the node's pods that hold GPUs, from the newest reading of its kubelet;
  // nullopt when no reading came since the last batch (older agents never send it).
  std::optional<std::vector<KubePod>> pods{};
  std::int64_t done_seq = 0;  // the last command seq carried out: the server may forget those
};

// The answer to a hello: what the agent needs to keep its session alive.
struct AgentSession {
  std::int64_t session = 0;  // > 0; names this connection in Commands() and Report()
  // The agent reports at least this often (an empty batch is a heartbeat)...
  std::chrono::milliseconds heartbeat{5000};
  // ...and the server declares the node down after this long without a report.
  std::chrono::milliseconds node_timeout{30000};
};

// An open command stream. Take() and Closed() from the stream's writer; the waker is called
// (from any thread, maybe while the writer is busy) when Take() has something new.
class CommandStream {
 public:
  virtual ~CommandStream() = default;
  // The commands after the last one taken (or after `after` at open), oldest first; may be
  // empty. Never blocks.
  virtual std::vector<AgentCommand> Take() = 0;
  // True once a newer session replaced this one or the server stops: end the stream.
  virtual bool Closed() const = 0;
  // Called when Take() would return more or Closed() became true. Set once, before the first
  // Take(); the stream calls it at most once per change and never after the stream is gone.
  virtual void SetWaker(std::function<void()> wake) = 0;
};

class AgentLinkService {
 public:
  virtual ~AgentLinkService() = default;

  // Registers (or re-registers) the node, ends its older session, and hands the controller the
  // inventory and jobs (AgentReports::OnAgentHello). Errors: kPermissionDenied (not a node
  // caller, or a token bound to another node), kInvalidArgument naming the field (no node
  // name, a bad label).
  virtual Result<AgentSession> Hello(const Caller& caller, AgentHello hello) = 0;

  // Errors: kPermissionDenied as Hello; kFailedPrecondition "stale session" when the session
  // is not the node's current one (the agent then says hello again).
  virtual Status Report(const Caller& caller, std::int64_t session, AgentReportBatch batch) = 0;

  // The session's commands after seq `after`. Errors as Report.
  virtual Result<std::shared_ptr<CommandStream>> Commands(const Caller& caller,
                                                          std::int64_t session,
                                                          std::int64_t after) = 0;

  // The answer to a read_log command of this session: completes the read that waits for it.
  // Errors as Report, and kNotFound when no read waits for that request (it timed out, or the
  // session changed since): the agent drops the answer.
  virtual Status LogReply(const Caller& caller, std::int64_t session, AgentLogReply reply) = 0;
};

}  // namespace gf
