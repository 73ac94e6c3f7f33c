// RemoteLink: the agent's side of the link with `gpufleet server` (service/agent_link.h),
// for `gpufleet agent`. It is the AgentReports of the node's LocalAgent: what the agent reports
// goes to the server over HTTP, and the commands the server streams go to the LocalAgent (its
// NodeAgent methods), so the same agent code runs in-process (`gpufleet up`) and remote.
//
// Two threads:
//  - the sender says hello (retrying with backoff until a server answers), then posts reports:
//    at once when there is something to say, else every heartbeat (an empty batch). A report
//    refused as "stale session" (the server restarted, or declared the node down) makes the
//    agent say hello again (LocalAgent::SayHelloAgain, so that the hello follows every report
//    made before it); a report that cannot be delivered is kept and sent again.
//  - the listener follows the session's command stream and hands each command to the agent,
//    reconnecting with backoff from the last command it took. A read_log is answered at once
//    (NodeAgent::ReadLog reads the local file) and the sender posts the chunk (POST
//    /agent/logs) ahead of its reports.
// Exits stay in the next hello's `ended` until the server acknowledges them, so an exit lost
// with a connection is not lost for good.
//
// Ownership: borrows the NodeAgent (set with Attach before Start; it must outlive the link).
// Thread-safety: the AgentReports methods from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "api/api_client.h"
#include "service/agent_link.h"
#include "service/node_agent.h"

namespace gf {

struct RemoteLinkOptions {
  std::string servers;        // "https://a:7460,https://b:7460" (ApiClient endpoints)
  ApiClientOptions client{};  // CA file, node token, timeout
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
};

class RemoteLink final : public AgentReports {
 public:
  explicit RemoteLink(RemoteLinkOptions options);
  ~RemoteLink() override;  // Stop()s
  RemoteLink(const RemoteLink&) = delete;
  RemoteLink& operator=(const RemoteLink&) = delete;

  // The agent that carries out commands, and how to ask it for a fresh hello.
  void Attach(NodeAgent* agent, std::function<void()> say_hello_again);
  // Starts both threads; the first hello comes from the agent's Start (OnAgentHello).
  void Start();
  void Stop();

  // Whether a session is open now (tests, and `gpufleet agent` logs).
  bool Connected() const;

  // AgentReports
  void OnAgentHello(AgentHello hello) override;
  void OnJobStarted(JobId job, std::int64_t pid, Time start_time) override;
  void OnJobExited(JobExitReport report) override;
  void OnSamples(NodeId node, std::vector<GpuSample> samples) override;
  void OnPods(const NodeId& node, std::vector<KubePod> pods) override;
  void OnAgentHeartbeat(const NodeId&) override {}  // the server's side only

 private:
  void SenderLoop();
  void ListenerLoop();
  // One hello; on success the session is open and the listener (re)connects.
  bool SayHello(ApiClient& client, const AgentHello& hello);
  bool SendReports(ApiClient& client);
  // Posts the answers to read_log commands (POST /agent/logs), each to its session.
  void SendLogReplies(ApiClient& client);
  // Hands the command (from the stream of `session`) to the agent.
  void Dispatch(const AgentCommand& command, std::int64_t session);
  std::chrono::milliseconds Backoff(int failures) const;

  RemoteLinkOptions options_;
  NodeAgent* agent_ = nullptr;
  std::function<void()> say_hello_again_;

  mutable std::mutex mu_;
  std::condition_variable cv_;                     // wakes the sender
  std::condition_variable session_cv_;             // wakes the listener
  bool stopping_ = false;                          // GUARDED_BY(mu_)
  std::optional<AgentHello> hello_;                // GUARDED_BY(mu_): to send
  std::int64_t session_ = 0;                       // GUARDED_BY(mu_): 0 = none open
  AgentSession session_info_{};                    // GUARDED_BY(mu_)
  AgentReportBatch batch_;                         // GUARDED_BY(mu_): not yet delivered
  std::map<JobId, JobExitReport> unacknowledged_;  // GUARDED_BY(mu_)
  // GUARDED_BY(mu_): answers to read_log commands not yet posted, with their session.
  std::deque<std::pair<std::int64_t, AgentLogReply>> log_replies_;
  static constexpr std::size_t kMaxQueuedLogReplies = 16;
  // GUARDED_BY(mu_): the last command of the current session carried out (0 at each hello).
  std::int64_t done_seq_ = 0;
  std::thread sender_;
  std::thread listener_;
  std::stop_source listener_stop_;
};

}  // namespace gf
