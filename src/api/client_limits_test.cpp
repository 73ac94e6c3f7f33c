// ClientLimits on its own: budgets per client and per listener, exemptions, the token bucket
// under a manual clock, and the messages that name each limit.
#include "api/client_limits.h"

#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

using Resource = ClientLimits::Resource;

ClientKey Tcp(std::string id) {
  return ClientKey{Listener::kTcp, std::move(id), false};
}
ClientKey Socket(std::string id, bool exempt = false) {
  return ClientKey{Listener::kSocket, std::move(id), exempt};
}

TEST(ClientLimitsTest, OneClientCannotTakeMoreThanItsShare) {
  ManualClock clock;
  ClientLimits limits(ClientLimitsOptions{.max_streams = 10, .streams_per_client = 2}, clock);
  std::vector<ClientLimits::Lease> held;
  for (int i = 0; i < 2; ++i) {
    auto admission = limits.Admit(Resource::kStream, Tcp("addr:10.0.0.7"));
    ASSERT_FALSE(admission.refused.has_value());
    held.push_back(std::move(admission.lease));
  }
  auto third = limits.Admit(Resource::kStream, Tcp("addr:10.0.0.7"));
  ASSERT_TRUE(third.refused.has_value());
  EXPECT_FALSE(third.lease.Held());
  EXPECT_EQ(third.refused->code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(third.refused->reason,
            "the limit is 2 per client ([api] watches_per_client); 10.0.0.7 has 2 open");
  // Another client still gets one, and the same name on the socket is another budget.
  EXPECT_FALSE(limits.Admit(Resource::kStream, Tcp("user:alice")).refused.has_value());
  EXPECT_FALSE(limits.Admit(Resource::kStream, Socket("addr:10.0.0.7")).refused.has_value());
  // A lease given back is a slot free again.
  held.pop_back();
  EXPECT_FALSE(limits.Admit(Resource::kStream, Tcp("addr:10.0.0.7")).refused.has_value());
  EXPECT_EQ(limits.Counts().client_watches_refused, 1);
}

TEST(ClientLimitsTest, TcpLeavesAQuarterForTheSocket) {
  ManualClock clock;
  ClientLimits limits(ClientLimitsOptions{.max_connections = 8, .connections_per_client = 100},
                      clock);
  std::vector<ClientLimits::Lease> held;
  for (int i = 0; i < 6; ++i) {
    auto admission = limits.Admit(Resource::kConnection, Tcp("addr:" + std::to_string(i)));
    ASSERT_FALSE(admission.refused.has_value()) << i;
    held.push_back(std::move(admission.lease));
  }
  auto tcp = limits.Admit(Resource::kConnection, Tcp("addr:99"));
  ASSERT_TRUE(tcp.refused.has_value());
  EXPECT_EQ(tcp.refused->code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(tcp.refused->reason,
            "the TCP port's limit is 6 of [api] max_connections 8; the rest is kept for the "
            "Unix socket");
  for (int i = 0; i < 2; ++i) {
    auto admission = limits.Admit(Resource::kConnection, Socket("uid:" + std::to_string(i)));
    ASSERT_FALSE(admission.refused.has_value()) << i;
    held.push_back(std::move(admission.lease));
  }
  // The server is full now: a 503 for anyone, root included.
  auto full = limits.Admit(Resource::kConnection, Socket("uid:0", /*exempt=*/true));
  ASSERT_TRUE(full.refused.has_value());
  EXPECT_EQ(full.refused->code, ErrorCode::kUnavailable);
  EXPECT_EQ(full.refused->reason, "the limit is 8 on this server ([api] max_connections)");
  const ApiServerCounts counts = limits.Counts();
  EXPECT_EQ(counts.tcp_connections, 6);
  EXPECT_EQ(counts.socket_connections, 2);
  EXPECT_EQ(counts.connections_refused, 2);
}

TEST(ClientLimitsTest, WithoutASocketTcpMayUseEverything) {
  ManualClock clock;
  ClientLimits limits(
      ClientLimitsOptions{.max_streams = 4, .streams_per_client = 4, .socket_reserve = false},
      clock);
  std::vector<ClientLimits::Lease> held;
  for (int i = 0; i < 4; ++i) {
    auto admission = limits.Admit(Resource::kStream, Tcp("addr:a"));
    ASSERT_FALSE(admission.refused.has_value()) << i;
    held.push_back(std::move(admission.lease));
  }
}

TEST(ClientLimitsTest, ExemptClientsHaveNoPerClientLimitAndNoRateLimit) {
  ManualClock clock;
  ClientLimits limits(ClientLimitsOptions{.max_streams = 100,
                                          .streams_per_client = 1,
                                          .requests_per_second = 1,
                                          .request_burst = 1},
                      clock);
  std::vector<ClientLimits::Lease> held;
  const ClientKey agent{Listener::kTcp, "node:n1", true};
  for (int i = 0; i < 5; ++i) {
    auto admission = limits.Admit(Resource::kStream, agent);
    ASSERT_FALSE(admission.refused.has_value());
    held.push_back(std::move(admission.lease));
    EXPECT_FALSE(limits.TakeRequest(agent).has_value());
  }
}

TEST(ClientLimitsTest, TokenBucketRefillsAtTheRateAndSaysWhenToRetry) {
  ManualClock clock;
  ClientLimits limits(ClientLimitsOptions{.requests_per_second = 2, .request_burst = 3}, clock);
  const ClientKey alice = Tcp("user:alice");
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limits.TakeRequest(alice).has_value()) << i;  // the burst
  }
  const auto refused = limits.TakeRequest(alice);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(refused->retry_after, std::chrono::seconds(1));
  EXPECT_EQ(refused->reason,
            "the limit is 2 requests a second per client, in bursts of up to 3 ([api] "
            "rate_limit, rate_burst); user alice sent more");
  EXPECT_FALSE(limits.TakeRequest(Tcp("user:bob")).has_value());  // bob has his own bucket
  clock.Advance(Millis(500));                                     // one token back
  EXPECT_FALSE(limits.TakeRequest(alice).has_value());
  EXPECT_TRUE(limits.TakeRequest(alice).has_value());
  clock.Advance(std::chrono::hours(1));  // refilled to the burst, not beyond
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limits.TakeRequest(alice).has_value()) << i;
  }
  EXPECT_TRUE(limits.TakeRequest(alice).has_value());
  EXPECT_EQ(limits.Counts().requests_limited, 3);
}

TEST(ClientLimitsTest, ZeroRateMeansNoRateLimit) {
  ManualClock clock;
  ClientLimits limits(ClientLimitsOptions{.requests_per_second = 0}, clock);
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_FALSE(limits.TakeRequest(Tcp("addr:x")).has_value());
  }
}

}  // namespace
}  // namespace gf
