#include "api/client_limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace gf {
namespace {

// Buckets are forgotten once full (an idle client's bucket is as good as none), but only when
// there are this many, so a busy server does not sweep on every request.
constexpr std::size_t kBucketSweepAt = 4096;

std::size_t Index(Listener listener) {
  return listener == Listener::kSocket ? 0 : 1;
}

// The budget a key draws from: listeners never share one, even for the same name.
std::string BudgetKey(const ClientKey& key) {
  return (key.listener == Listener::kSocket ? "socket/" : "tcp/") + key.id;
}

// What the client is called in a refusal: "uid 1000", "user alice", "10.0.0.7".
std::string Describe(const ClientKey& key) {
  const std::size_t colon = key.id.find(':');
  if (colon == std::string::npos) {
    return key.id;
  }
  const std::string kind = key.id.substr(0, colon);
  const std::string name = key.id.substr(colon + 1);
  return kind == "addr" ? name : kind + " " + name;
}

// The settings of each resource, for the messages (docs/config.md [api]).
struct ResourceNames {
  const char* server_wide;
  const char* per_client;
};
ResourceNames NamesOf(ClientLimits::Resource resource) {
  return resource == ClientLimits::Resource::kConnection
             ? ResourceNames{"max_connections", "connections_per_client"}
             : ResourceNames{"max_watches", "watches_per_client"};
}

}  // namespace

ClientLimits::Lease& ClientLimits::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    resource_ = other.resource_;
    key_ = std::move(other.key_);
  }
  return *this;
}

void ClientLimits::Lease::Release() {
  if (owner_ != nullptr) {
    std::exchange(owner_, nullptr)->Release(resource_, key_);
  }
}

ClientLimits::ClientLimits(ClientLimitsOptions options, const Clock& clock)
    : options_(options), clock_(clock) {}

int ClientLimits::ListenerLimit(int limit, Listener listener) const {
  if (listener == Listener::kTcp && options_.socket_reserve) {
    return limit - limit / 4;
  }
  return limit;
}

ClientLimits::Admission ClientLimits::Admit(Resource resource, const ClientKey& key) {
  const bool connection = resource == Resource::kConnection;
  const int limit = connection ? options_.max_connections : options_.max_streams;
  const int per_client = connection ? options_.connections_per_client : options_.streams_per_client;
  const ResourceNames names = NamesOf(resource);
  const std::string budget = BudgetKey(key);
  std::lock_guard<std::mutex> lock(mu_);
  Usage& usage = UsageOf(resource);
  const int listener_limit = ListenerLimit(limit, key.listener);
  Admission out;
  if (usage.open[0] + usage.open[1] >= limit) {
    ++usage.refused;
    out.refused = Refusal{connection ? ErrorCode::kUnavailable : ErrorCode::kResourceExhausted,
                          "the limit is " + std::to_string(limit) + " on this server ([api] " +
                              names.server_wide + ")",
                          std::chrono::seconds(connection ? 5 : 10)};
    return out;
  }
  if (usage.open[Index(key.listener)] >= listener_limit) {
    ++usage.refused;
    out.refused = Refusal{ErrorCode::kResourceExhausted,
                          "the TCP port's limit is " + std::to_string(listener_limit) +
                              " of [api] " + names.server_wide + " " + std::to_string(limit) +
                              "; the rest is kept for the Unix socket",
                          std::chrono::seconds(10)};
    return out;
  }
  auto client = usage.per_client.find(budget);
  const int held = client == usage.per_client.end() ? 0 : client->second;
  if (!key.exempt && held >= per_client) {
    ++usage.client_refused;
    out.refused = Refusal{ErrorCode::kResourceExhausted,
                          "the limit is " + std::to_string(per_client) + " per client ([api] " +
                              names.per_client + "); " + Describe(key) + " has " +
                              std::to_string(held) + " open",
                          std::chrono::seconds(10)};
    return out;
  }
  ++usage.open[Index(key.listener)];
  ++usage.per_client[budget];
  out.lease.owner_ = this;
  out.lease.resource_ = resource;
  out.lease.key_ = key;
  return out;
}

void ClientLimits::Release(Resource resource, const ClientKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Usage& usage = UsageOf(resource);
  --usage.open[Index(key.listener)];
  auto client = usage.per_client.find(BudgetKey(key));
  if (client != usage.per_client.end() && --client->second <= 0) {
    usage.per_client.erase(client);  // the map holds only clients with something open
  }
}

std::optional<Refusal> ClientLimits::TakeRequest(const ClientKey& key) {
  const double rate = options_.requests_per_second;
  if (key.exempt || rate <= 0) {
    return std::nullopt;
  }
  const double burst = std::max(1, options_.request_burst);
  const Time now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (buckets_.size() >= kBucketSweepAt) {
    ForgetFullBuckets(now);
  }
  auto [it, added] = buckets_.try_emplace(BudgetKey(key), Bucket{burst, now});
  Bucket& bucket = it->second;
  const double elapsed_s = std::chrono::duration<double>(now - bucket.last).count();
  bucket.tokens = std::min(burst, bucket.tokens + std::max(0.0, elapsed_s) * rate);
  bucket.last = now;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return std::nullopt;
  }
  ++requests_limited_;
  const auto wait_s = static_cast<std::int64_t>(std::ceil((1 - bucket.tokens) / rate));
  char rate_text[32];
  std::snprintf(rate_text, sizeof(rate_text), "%g", rate);
  return Refusal{ErrorCode::kResourceExhausted,
                 "the limit is " + std::string(rate_text) + " requests a second per client, " +
                     "in bursts of up to " + std::to_string(static_cast<int>(burst)) +
                     " ([api] rate_limit, rate_burst); " + Describe(key) + " sent more",
                 std::chrono::seconds(std::max<std::int64_t>(1, wait_s))};
}

void ClientLimits::ForgetFullBuckets(Time now) {
  const double burst = std::max(1, options_.request_burst);
  std::erase_if(buckets_, [&](const auto& entry) {
    const double elapsed_s = std::chrono::duration<double>(now - entry.second.last).count();
    return entry.second.tokens + elapsed_s * options_.requests_per_second >= burst;
  });
}

ApiServerCounts ClientLimits::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  ApiServerCounts counts;
  counts.connections_refused = connections_.refused;
  counts.client_connections_refused = connections_.client_refused;
  counts.watches_refused = streams_.refused;
  counts.client_watches_refused = streams_.client_refused;
  counts.requests_limited = requests_limited_;
  counts.socket_connections = connections_.open[0];
  counts.tcp_connections = connections_.open[1];
  counts.socket_watches = streams_.open[0];
  counts.tcp_watches = streams_.open[1];
  return counts;
}

}  // namespace gf
