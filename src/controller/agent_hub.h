// AgentHub: the AgentLinkService of `gpufleet server` (service/agent_link.h). It keeps, per remote
// node, a RemoteAgent: the NodeAgent the controller drives, which turns each call into a
// numbered command in the node's outbox, read by the agent's command stream. Reports from the
// agent go to the controller's AgentReports.
//
// Sessions: each hello starts a new session of its node (a number, increasing over the hub's
// life) and empties the outbox: the controller reconciles the node from the hello and resends
// what the agent still needs (a launch not yet done, a kill still wanted). Older streams close.
//
// Liveness is the controller's (ControllerOptions::node_timeout): every Report is also a
// heartbeat (AgentReports::OnAgentHeartbeat).
//
// Log reads: RemoteAgent::ReadLog (an API worker, outside the controller's state thread) sends
// a read_log command on the current session's stream and waits, up to log_timeout, for the
// agent's LogReply with the same request number. Reads are not commands of the outbox: no seq,
// no done_seq, not kept for a later session (service/agent_link.h).
//
// Ownership: borrows the AgentReports and the attach function's target (the controller), which
// must outlive the hub; RemoteAgents live as long as the hub, so the controller may keep
// pointers to them. Thread-safety: all public methods, from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "service/agent_link.h"
#include "service/node_agent.h"

namespace gf {

class RemoteAgent;

struct AgentHubOptions {
  std::chrono::milliseconds heartbeat{5000};
  std::chrono::milliseconds node_timeout{30000};
  // Commands kept per node while its agent does not take them; past this, the oldest are
  // dropped (the next hello reconciles the node anyway).
  std::size_t max_outbox = 100'000;
  // How long a log read (`gpufleet logs` of a job on a remote node) waits for the node's agent
  // to answer before it fails, naming the node and the file.
  std::chrono::milliseconds log_timeout{10'000};
};

// The most a remote node sends for one log read, whatever the client's limit: the answer
// travels base64-encoded in a JSON body, which must stay under the API's 1 MiB request bound.
// Clients read on from next_offset, as for any short chunk.
inline constexpr std::int64_t kMaxRemoteLogChunkBytes = std::int64_t{512} * 1024;

class AgentHub final : public AgentLinkService {
 public:
  // `attach(node, agent)` registers the node's RemoteAgent with the controller
  // (Controller::AttachAgent); called once per node, on its first hello, before the hello is
  // handed to `reports`.
  using AttachFn = std::function<void(const NodeId&, NodeAgent*)>;
  AgentHub(AgentReports& reports, AttachFn attach, AgentHubOptions options = {});
  ~AgentHub() override;
  AgentHub(const AgentHub&) = delete;
  AgentHub& operator=(const AgentHub&) = delete;

  Result<AgentSession> Hello(const Caller& caller, AgentHello hello) override;
  Status Report(const Caller& caller, std::int64_t session, AgentReportBatch batch) override;
  Result<std::shared_ptr<CommandStream>> Commands(const Caller& caller,
                                                  std::int64_t session,
                                                  std::int64_t after) override;
  Status LogReply(const Caller& caller, std::int64_t session, AgentLogReply reply) override;

  // Closes every stream (server shutdown). Later calls fail with kUnavailable.
  void Close();

 private:
  // The node's agent for a caller that may speak for it; kPermissionDenied otherwise.
  Result<RemoteAgent*> AgentOf(const Caller& caller, const NodeId& node);
  Result<RemoteAgent*> SessionAgent(const Caller& caller, std::int64_t session);

  AgentReports& reports_;
  AttachFn attach_;
  AgentHubOptions options_;

  std::mutex mu_;
  std::map<NodeId, std::unique_ptr<RemoteAgent>> agents_;  // GUARDED_BY(mu_)
  std::map<std::int64_t, NodeId> sessions_;  // GUARDED_BY(mu_): current session → its node
  // Session numbers start at a random point: after a fail-over (or a restart) the new server's
  // sessions must not be mistaken for the old server's, which agents still present once.
  std::int64_t next_session_;  // GUARDED_BY(mu_)
  bool closed_ = false;        // GUARDED_BY(mu_)
};

// Whether `caller` may speak for node `node` on the agent link: root on the Unix socket, or a
// node token bound to that node (or a join token, bound to none). Exposed for the tests.
Status CheckNodeCaller(const Caller& caller, const NodeId& node);

}  // namespace gf
