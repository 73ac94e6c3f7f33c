// ApiClient: a synchronous HTTP/1.1 client for the gpufleet API, used by the CLI.
//
// The endpoint is a Unix socket path ("/run/gpufleet/gpufleet.sock", or "unix:PATH"),
// "http://HOST:PORT" or "https://HOST:PORT" (HOST an IP address or a name), or several of
// them separated by commas ("https://a:7460,https://b:7460"): the servers of one cluster, a
// leader and its standbys. One connection is kept and reused (keep-alive); a connection the
// server closed while idle is replaced before use. Every call is bounded by `timeout` (connect
// + send + receive).
//
// https: TLS 1.2 or later; the server's certificate must chain to `ca_file` (or a system CA)
// and name HOST (SNI is sent for a name). The bearer token goes on TCP (http and https) only,
// never on the Unix socket, whose caller the kernel names.
//
// Several endpoints: tried in order, starting with the one that answered last. The next one
// is tried when a server cannot be reached (its connect is then bounded by 5 s), when the
// connection is lost before an answer (for a GET; a POST that may have been applied is never
// sent to a second server), or when it answers 503 with the code `unavailable` (a standby).
// When none answers, the error names every endpoint and why. Watch() follows the same rule
// each time it connects.
//
// Error mapping: transport failures are kUnavailable ("cannot reach gpufleet at PATH: ...");
// CallJson turns a non-2xx answer back into the gf::Error the server reported (its code and
// message), so the CLI prints what the server said.
//
// Ownership: owns its connection. Thread-safety: none; use one ApiClient per thread.
// Boost.Beast stays in api_client.cpp (pimpl).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/http_types.h"
#include "api/sse.h"
#include "core/result.h"

namespace gf {

struct ApiClientOptions {
  std::chrono::milliseconds timeout{60'000};
  // "https://HOST:PORT" endpoints: the PEM file of the CA that signed the server's
  // certificate ("" = the system's CAs). The server's name is checked against it.
  std::string ca_file{};
  // Sent as "Authorization: Bearer TOKEN" on every request over TCP when not empty.
  std::string token{};
  // When set, every address a TCP endpoint's host resolves to ("127.0.0.1", "::1") is passed
  // to it first, and only the ones it returns OK for are connected to; when it refuses them
  // all, the call fails with its first refusal (as it gave it: not kUnavailable, so not worth
  // a retry). The notifier's: a webhook's host name must not lead to an address
  // [notify] webhook_allow keeps out (model/webhook_allow.h).
  std::function<Status(std::string_view address)> allow_address{};
  // What the endpoint is, in transport errors ("cannot reach PEER at URL: ..."): gpufleet's
  // server for the CLI and agents, "the Kubernetes API server" for the server's calls there.
  std::string peer = "gpufleet";
};

class ApiClient {
 public:
  explicit ApiClient(std::string endpoint, ApiClientOptions options = {});
  ~ApiClient();
  // The bound of every later call (ApiClientOptions::timeout): a caller that learns how fast
  // the server answers (an agent, from its heartbeat) gives up on a dead link sooner.
  void SetTimeout(std::chrono::milliseconds timeout);
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  const std::string& endpoint() const { return endpoint_; }

  // Sends one request and returns the response whatever its status. `target` is the origin
  // form ("/api/v1/jobs?all=1"). A body without a Content-Type header is sent as JSON.
  // Errors: kUnavailable (cannot connect, connection lost, timed out, TLS certificate not
  // trusted), kInvalidArgument (bad endpoint, bad CA file), kNotFound (no CA file).
  Result<HttpResponse> Call(std::string_view method,
                            std::string_view target,
                            const std::optional<std::string>& body = std::nullopt,
                            const HttpHeaders& headers = {});

  // Call() with a JSON body and a JSON answer. A non-2xx answer becomes the server's error
  // (code from the body, or from the HTTP status if the body names none). An empty 2xx body is
  // JSON null. Errors also: kInternal if a 2xx body is not JSON.
  Result<nlohmann::json> CallJson(std::string_view method,
                                  std::string_view target,
                                  const std::optional<nlohmann::json>& body = std::nullopt);

  // Follows a watch stream (GET `target`, e.g. "/api/v1/gpus?watch=1"; see api_server.h),
  // calling `on_event(event, data)` for each server-sent event, on this thread. Returns OK when
  // on_event returns false, `stop` is requested (from any thread: it closes the connection),
  // or the server ends the stream cleanly. Errors: the server's error when it refuses the watch
  // (401, 400, 429...); kUnavailable when the connection cannot be made or is lost, or nothing
  // (not even a keepalive) arrives within `timeout`; kInternal when the answer is not an event
  // stream. A watch takes a connection of its own: a kept-alive one is closed first.
  // `framing` kJsonLines follows a Kubernetes API watch instead (Content-Type
  // application/json, an object per line; `event` is "message", `data` the line).
  using WatchCallback = std::function<bool(std::string_view event, std::string_view data)>;
  Status Watch(std::string_view target,
               const WatchCallback& on_event,
               const std::stop_token& stop = {},
               WatchFraming framing = WatchFraming::kServerSentEvents);

 private:
  class Impl;
  std::string endpoint_;
  std::unique_ptr<Impl> impl_;
};

// The error a non-2xx response stands for (used by CallJson; exposed for callers of Call).
Error ErrorFromResponse(const HttpResponse& response);

}  // namespace gf
