// Fuzz target: the route layer of the API (Router::Handle): path matching, path parameters,
// query-string decoding and checks, and the handlers behind them, over a FakeClusterService.
// HTTP parsing itself is Beast's and not fuzzed here.
//
// Input: "METHOD\nTARGET\nBODY..." (a missing line is empty). A METHOD starting with '!' makes
// the caller unauthenticated (as on TCP). The body is labelled application/json, as our clients
// label theirs, so that it reaches the handlers (and ParseJsonText) rather than a 415. Oracle:
// Handle never throws and never answers 500, since the fake service never fails: a 500 would mean
// an exception escaped a handler.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/fake_cluster_service.h"
#include "api/routes.h"
#include "core/check.h"

namespace {

std::string_view NextLine(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  gf::HttpRequest request;
  request.method = std::string(NextLine(rest));
  request.target = std::string(NextLine(rest));
  request.body = std::string(rest);
  request.headers.emplace_back("Content-Type", "application/json");

  gf::Caller caller{.authenticated = true, .uid = 1000, .gid = 1000, .user = "alice"};
  if (!request.method.empty() && request.method.front() == '!') {
    request.method.erase(0, 1);
    caller = gf::Caller{};
  }

  gf::testing::FakeClusterService service;
  // The /logs route hands the read to the service (the node's agent reads the file).
  service.log_chunk = gf::LogChunk{.data = "epoch 1 loss 0.5\n", .size = 34, .next_offset = 17};
  const gf::Router router(service);
  const gf::HttpResponse response = router.Handle(caller, request);
  GF_CHECK(response.status != 500);
  GF_CHECK(response.status >= 200 && response.status < 600);
  return 0;
}
