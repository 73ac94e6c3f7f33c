// ApiServer: serves /api/v1 and /metrics (routes.h) over HTTP/1.1 on a Unix socket and on TCP.
//
// Identity: a Unix-socket caller is who the kernel says (SO_PEERCRED uid/gid, name from
// getpwuid_r or "uid<N>"); a TCP request with "Authorization: Bearer TOKEN" is the Caller
// `authenticate` makes of it (or 401 with its message); without one it is unauthenticated, so
// it may read health/nodes/gpus but job routes answer 401. With tls_cert_file/tls_key_file the
// TCP port speaks TLS 1.2+ only (a plain HTTP request there gets a plain 400 naming https://). The
// socket file is mode 0666 on purpose: every local user may connect, and the server learns who they
// are from the kernel.
//
// Threads: `io_threads` run all socket I/O asynchronously; requests are handled on a separate
// pool of `worker_threads`, because ClusterService calls block until the controller has applied
// them and must not stall other connections. One request at a time per connection (HTTP/1.1
// without pipelining overlap); keep-alive; bodies over 1 MiB get 413; a request whose headers
// and body do not arrive within `read_timeout` (also the keep-alive idle limit) is dropped.
//
// Watches: GET /api/v1/{jobs,gpus,nodes}?watch=1 answer text/event-stream (server-sent events,
// chunked): first the whole list as one event (`event: jobs|gpus|nodes`, `data:` the JSON the
// plain GET returns, on one line), then the whole list again each time it changed. Every
// `watch_interval` the server re-reads through ClusterService (on a worker: a watch holds no
// worker between ticks, only an Asio timer) and sends only when the JSON differs; an idle
// stream gets a `: keepalive` comment every `watch_keepalive`. Identity and visibility are the
// plain GET's (each re-read is that GET, as that caller); an error on the first read is an
// ordinary error response (401 for jobs on TCP), a later one is sent as `event: error` with the
// error JSON, and the stream then ends. A watch ends when the client disconnects (the server
// keeps a read pending to notice) or the server stops.
//
// Limits (client_limits.h, docs/config.md [api]): connections, watches (agent command streams
// included) and requests are counted per client: a uid on the Unix socket; on TCP the user of
// a valid token, the node of a node token, else the remote address. Over its share a client
// gets 429 with Retry-After naming the limit; the TCP listener holds at most three quarters of
// `max_connections` and `max_watches`, the rest being kept for the Unix socket; root and the
// server's own user on the socket, and node agents, have no per-client limit and no rate
// limit. A connection over a limit is answered before its request is read (503 when the server
// is full, 429 over the client's share; on a TLS port it is closed, since an answer would need
// a handshake first) and closed. A failed accept (EMFILE: no descriptor left) pauses that
// listener 100 ms, doubling to 1 s, logged once per burst, instead of failing again at once
// forever. Every connection has `read_timeout` to send each request, idle or not.
//
// Ownership: borrows the ClusterService, which must outlive the server. Boost.Beast stays in
// api_server.cpp (pimpl).
// Thread-safety: Start/Stop/destructor from one owning thread; tcp_port() from any thread
// after Start returned.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "metrics/prometheus.h"
#include "service/agent_link.h"
#include "service/service.h"

namespace gf {

class ClusterSeries;
class Telemetry;

struct ApiServerOptions {
  // Listen here if set (see socket_path.h for the default rule). The parent folder is created.
  std::optional<std::string> unix_socket_path;
  std::string tcp_host = "127.0.0.1";
  int tcp_port = 0;  // 0 = pick a free port (see tcp_port()); negative = no TCP listener
  int io_threads = 2;
  // A submission holds its worker until its commit: the controller's group commit can be only
  // as large as the workers waiting on it, so there are more than cores (they mostly wait).
  int worker_threads = 16;
  std::chrono::milliseconds read_timeout{30'000};
  std::chrono::milliseconds watch_interval{1'000};
  std::chrono::milliseconds watch_keepalive{15'000};
  // Limits (see above; docs/config.md [api] has the same names).
  int max_connections = 0;  // both listeners; 0 = three quarters of the open-file limit
  int connections_per_client = 256;
  int max_watches = 256;  // watches and agent command streams, both listeners
  int watches_per_client = 16;
  // 500/s: a user's loop of CLI submissions runs at ~80/s (one process per job, ~200/s with 4
  // in parallel), and must never meet 429; the limit is for a client flooding the API.
  double rate_limit = 500;  // requests a second per client; 0 = no rate limit
  int rate_burst = 1000;    // requests a client may send at once before rate_limit applies
  // Feeds GET /metrics' GPU families (borrowed; must outlive the server). Null: none.
  const Telemetry* telemetry = nullptr;
  // Serves GET /api/v1/cluster/series, the dashboard's overview (borrowed; must outlive the
  // server). Null: that route answers 503.
  const ClusterSeries* cluster_series = nullptr;
  // TLS on the TCP listener when both are set (PEM files; the key may not be world-readable).
  // The Unix socket stays plain: the kernel vouches for its callers.
  std::string tls_cert_file{};
  std::string tls_key_file{};
  // Turns the token of an "Authorization: Bearer TOKEN" header on TCP into the Caller
  // (model/token.h); an error answers 401 with its message. Unset: TCP callers stay
  // unauthenticated. Called on worker threads.
  std::function<Result<Caller>(std::string_view token)> authenticate{};
  // Serves the agent link under /api/v1/agent/ (gpufleet server; borrowed, must outlive the
  // server). Null: those routes answer 404. Command streams count against max_watches (not
  // against watches_per_client: a node agent has no per-client limit).
  AgentLinkService* agent_link = nullptr;
};

class ApiServer {
 public:
  ApiServer(ClusterService& service, ApiServerOptions options);
  ~ApiServer();  // Stop()s
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds the listeners and starts the threads. A stale socket file (nothing answers on it)
  // is replaced. Errors: kAlreadyExists "another gpufleet is listening on PATH" (or PATH is not
  // a socket), kInvalidArgument (path too long, bad host), kIo (bind/listen failed),
  // kFailedPrecondition (already started).
  Status Start();

  // The bound TCP port (useful with tcp_port = 0); -1 when there is no TCP listener.
  int tcp_port() const;  // NOLINT(readability-identifier-naming): accessor

  // What the limits refused and what is open now (also appended to GET /metrics). Any thread.
  ApiServerCounts counts() const;  // NOLINT(readability-identifier-naming): accessor

  // Stops accepting, closes every connection, waits for in-flight handlers, joins all threads,
  // and removes the socket file if it is still ours. Idempotent.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gf
