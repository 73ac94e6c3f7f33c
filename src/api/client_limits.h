// ClientLimits: how much of the API server one client may hold, so that no client (and no
// crowd of anonymous TCP clients) can deny the server to the others (issue #20).
//
// Three resources, each counted per client identity (ClientKey) and per listener:
//  - connections: at most `max_connections` open on the server, `connections_per_client` per
//    client;
//  - streams (watches and agent command streams): at most `max_streams`, `streams_per_client`
//    per client;
//  - requests: a token bucket per client, `requests_per_second` refilled, `request_burst` deep.
// The TCP listener may hold at most three quarters of each server-wide limit (when the server
// also listens on a Unix socket): the rest is kept for the socket, so that a flood over TCP
// never locks root (or any local user) out of `gpufleet top` and the CLI. An exempt client
// (root or the server's own user on the socket, a node agent on TCP) is held to the
// server-wide and per-listener limits only: never to the per-client ones, never rate limited.
//
// A refusal says which limit was hit, its value, the setting that raises it, and when to retry.
// Pure bookkeeping: no I/O, no Beast; the time comes from the injected Clock.
// Thread-safe: every member may be called from any thread (one mutex; each call is O(1)
// amortized). A Lease may be destroyed on any thread; the ClientLimits must outlive it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/clock.h"
#include "core/result.h"
#include "metrics/prometheus.h"

namespace gf {

enum class Listener { kSocket, kTcp };

// Who a connection, stream or request counts against.
struct ClientKey {
  Listener listener = Listener::kTcp;
  // "uid:1000" (socket), "user:alice" (a user token), "node:n1" (a node token),
  // "addr:10.0.0.7" (TCP without a valid token). Listeners never share a budget.
  std::string id;
  bool exempt = false;  // no per-client limit and no rate limit (see above)
};

struct ClientLimitsOptions {
  int max_connections = 1024;        // both listeners together; >= 1
  int connections_per_client = 256;  // >= 1
  int max_streams = 256;             // watches + command streams, both listeners; >= 1
  int streams_per_client = 16;       // >= 1
  double requests_per_second = 50;   // per client; 0 = no rate limit
  int request_burst = 200;           // bucket depth, >= 1 when requests_per_second > 0
  // Keep a quarter of each server-wide limit for the Unix socket (TCP gets the rest). Set by
  // the server when it listens on both.
  bool socket_reserve = true;
};

// Why something was not admitted. kUnavailable: the server as a whole is full (HTTP 503);
// kResourceExhausted: this client's share, or the TCP listener's, is used up (HTTP 429).
struct Refusal {
  ErrorCode code = ErrorCode::kResourceExhausted;
  // The limit and the way out, e.g. "the limit is 16 per client ([api] watches_per_client);
  // user alice has 16 open".
  std::string reason;
  std::chrono::seconds retry_after{1};
};

class ClientLimits {
 public:
  enum class Resource { kConnection, kStream };

  // A held connection or stream slot; gives it back when destroyed. Move-only.
  class Lease {
   public:
    Lease() = default;
    ~Lease() { Release(); }
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    bool Held() const { return owner_ != nullptr; }

   private:
    friend class ClientLimits;
    void Release();
    ClientLimits* owner_ = nullptr;
    Resource resource_ = Resource::kConnection;
    ClientKey key_;
  };

  // Either a held lease or the refusal.
  struct Admission {
    Lease lease;
    std::optional<Refusal> refused;
  };

  ClientLimits(ClientLimitsOptions options, const Clock& clock);
  ClientLimits(const ClientLimits&) = delete;
  ClientLimits& operator=(const ClientLimits&) = delete;

  // Takes one connection or stream slot for `key`, or says why not (and counts the refusal).
  Admission Admit(Resource resource, const ClientKey& key);

  // Takes one request from `key`'s bucket: nullopt when allowed, else the refusal (429, with
  // the seconds until a token is back). Exempt keys always pass.
  std::optional<Refusal> TakeRequest(const ClientKey& key);

  // What was refused and what is open (ApiServerCounts without accept_errors, which the
  // accept loops count).
  ApiServerCounts Counts() const;
  const ClientLimitsOptions& options() const { return options_; }  // NOLINT: accessor

  // The most `listener` may hold of a server-wide `limit` (the socket reserve applied).
  int ListenerLimit(int limit, Listener listener) const;

 private:
  struct Usage {
    std::array<int, 2> open{};                        // by Listener: socket, TCP
    std::unordered_map<std::string, int> per_client;  // by BudgetKey; only keys holding some
    std::int64_t refused = 0;
    std::int64_t client_refused = 0;
  };
  struct Bucket {
    double tokens = 0;
    Time last{};
  };

  void Release(Resource resource, const ClientKey& key);
  Usage& UsageOf(Resource resource) {  // REQUIRES: mu_ held
    return resource == Resource::kConnection ? connections_ : streams_;
  }
  void ForgetFullBuckets(Time now);  // REQUIRES: mu_ held

  const ClientLimitsOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  Usage connections_;                                // GUARDED_BY(mu_)
  Usage streams_;                                    // GUARDED_BY(mu_)
  std::unordered_map<std::string, Bucket> buckets_;  // GUARDED_BY(mu_), by BudgetKey
  std::int64_t requests_limited_ = 0;                // GUARDED_BY(mu_)
};

}  // namespace gf
