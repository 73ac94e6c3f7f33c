// Internal to gf_api: the API server's state (ApiServerState) as its connections see it, and
// how a connection just accepted becomes a Session. Apart from api_server.cpp so that the
// listener file (api_server.cpp) and the connection files (api_session.cpp, api_streams.cpp)
// share one definition of it; include it from those three alone (it brings in Beast).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

#include "api/api_server.h"
#include "api/beast_names.h"
#include "api/client_limits.h"
#include "api/routes.h"

namespace gf {

// A connection, as the server's registry sees it: something Stop() can close.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void PostClose() = 0;
};

// All of the server but its public face. Not named ApiServer::Impl directly because sessions
// (api_session.h) need to name it and Impl is private.
class ApiServerState {
 public:
  ApiServerState(ClusterService& service, ApiServerOptions options)
      : router_(service, options.telemetry, options.agent_link, options.cluster_series),
        options_(std::move(options)),
        owner_uid_(::geteuid()) {}

  Status Start();
  void Stop();
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  int tcp_port() const { return tcp_port_.load(); }

  // Registry of live sessions, so that Stop() can close idle keep-alive connections.
  bool Register(SessionBase* s, std::weak_ptr<SessionBase> w) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      return false;
    }
    sessions_[s] = std::move(w);
    return true;
  }
  void Unregister(SessionBase* s) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(s);
  }

  // The budget of a Unix-socket caller: its uid. Root and the server's own user have no
  // per-client limit: the socket is how they run the server, whoever else is on it.
  ClientKey SocketKey(std::uint32_t uid) const {
    return ClientKey{
        Listener::kSocket, "uid:" + std::to_string(uid), uid == 0 || uid == owner_uid_};
  }

  ApiServerCounts Counts() const {
    ApiServerCounts counts = limits_ ? limits_->Counts() : ApiServerCounts{};
    counts.accept_errors = accept_errors_.load();
    return counts;
  }

  // Refused connections answered now (kMaxRefusing at most); false: close without an answer.
  bool StartRefusing() {
    if (refusing_.fetch_add(1) >= kMaxRefusing) {
      refusing_.fetch_sub(1);
      return false;
    }
    return true;
  }
  void DoneRefusing() { refusing_.fetch_sub(1); }

  // Accessors, named after their fields.
  // NOLINTBEGIN(readability-identifier-naming)
  const Router& router() const { return router_; }
  const ApiServerOptions& options() const { return options_; }
  ClientLimits& limits() { return *limits_; }  // set by Start
  net::io_context& ioc() { return ioc_; }
  net::thread_pool& workers() { return *workers_; }
  // NOLINTEND(readability-identifier-naming)

 private:
  // Connections refused with an answer at once; beyond this many (each lingers to let the client
  // read its answer) a refused connection is closed without one.
  static constexpr int kMaxRefusing = 64;

  Status StartUnix(const std::string& path);
  Status StartTcp();
  Status LoadTls();
  Status CheckLimits() const;

  // One listener's accept loop, touched only on its acceptor's strand.
  struct AcceptLoop {
    const char* name;                          // "the Unix socket", "the TCP port"
    std::optional<net::steady_timer> pause{};  // on the acceptor's strand, once it exists
    std::chrono::milliseconds delay{0};        // the pause after the next failure; 0: none yet
    std::int64_t failures = 0;                 // failed accepts in the current burst
    std::int64_t refused = 0;                  // connections refused since the last one admitted
  };
  template <typename Socket, typename Acceptor, typename OnSocket>
  void Accept(Acceptor& acceptor, AcceptLoop& loop, OnSocket on_socket);
  void PauseAccepting(AcceptLoop& loop, const beast::error_code& ec, std::function<void()> again);
  template <typename Socket>
  void Admit(
      AcceptLoop& loop, Socket socket, Caller caller, const ClientKey& key, std::string peer);
  void AcceptUnix();
  void AcceptTcp();
  void RunIo();

  Router router_;
  ApiServerOptions options_;
  const std::uint32_t owner_uid_;  // the server's effective uid
  SystemClock clock_;              // the rate limit's
  // Before ioc_: leases held by connections still queued in ioc_ are given back when it dies.
  std::optional<ClientLimits> limits_;  // set by Start
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::unique_ptr<net::thread_pool> workers_;
  std::optional<LocalProtocol::acceptor> unix_acceptor_;
  std::optional<Tcp::acceptor> tcp_acceptor_;
  std::optional<ssl::context> tls_;  // set when the TCP listener speaks TLS
  std::vector<std::thread> io_threads_;
  std::atomic<int> tcp_port_{-1};
  AcceptLoop unix_accept_{"the Unix socket"};
  AcceptLoop tcp_accept_{"the TCP port"};
  std::atomic<std::int64_t> accept_errors_{0};
  std::atomic<int> refusing_{0};       // refused connections still being answered
  std::optional<ino_t> socket_inode_;  // the socket file we created, removed on Stop if ours
  bool started_ = false;               // owner thread only
  bool stopped_ = false;               // owner thread only

  std::mutex mu_;
  bool stopping_ = false;                                                  // GUARDED_BY(mu_)
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions_;  // GUARDED_BY(mu_)
};

// Starts the session of a connection just accepted (api_session.cpp): it reads requests, or,
// when `admission` refused it, answers the refusal and closes. For the Unix socket, a TCP
// socket and TlsStream.
template <typename Socket>
void StartSession(ApiServerState& server,
                  Socket socket,
                  Caller caller,
                  std::string peer,
                  ClientLimits::Admission admission);

}  // namespace gf
