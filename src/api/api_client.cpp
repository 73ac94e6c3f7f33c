// The only file of the client that includes Boost.Beast (it compiles slowly).
#include "api/api_client.h"

#include <poll.h>
#include <sys/socket.h>

#include "api/beast_names.h"
#include "api/json_mapping.h"
#include "api/routes.h"
#include "api/sse.h"

namespace gf {
namespace {

using Deadline = std::chrono::steady_clock::time_point;

// Log chunks are at most 8 MiB; leave room for everything else.
constexpr std::uint64_t kMaxResponseBytes = 64 << 20;

constexpr std::string_view kReachHint =
    " (is `gpufleet up` running? set GPUFLEET_SOCKET or --socket)";

// Did the peer close a kept-alive connection while it was idle? A readable socket with nothing
// to read (EOF) or an error means yes; unexpected data means we are out of step: also replace it.
bool IsStale(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) {
    return false;  // nothing pending: alive
  }
  char c = 0;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != -1 || errno != EAGAIN;
}

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE";
}

HttpResponse ToHttpResponse(http::response<http::string_body>&& res) {
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    out.headers.emplace_back(static_cast<std::string>(field.name_string()),
                             static_cast<std::string>(field.value()));
  }
  out.body = std::move(res.body());
  return out;
}

}  // namespace

class ApiClient::Impl {
 public:
  Impl(const std::string& endpoint, ApiClientOptions options) : options_(options) {
    endpoint_ = endpoint;
    std::string_view e = endpoint;
    if (e.starts_with("http://")) {
      e.remove_prefix(7);
      if (!e.empty() && e.back() == '/') {
        e.remove_suffix(1);
      }
      const std::size_t colon = e.rfind(':');
      if (colon == std::string_view::npos || colon == 0 || colon + 1 == e.size()) {
        endpoint_error_ = InvalidArgument("endpoint \"" + endpoint +
                                          "\": expected http://HOST:PORT or a socket path");
      }
      host_ = std::string(e.substr(0, colon));
      port_ = std::string(e.substr(colon + 1));
      is_unix_ = false;
    } else if (e.starts_with("https://")) {
      endpoint_error_ = InvalidArgument("endpoint \"" + endpoint + "\": TLS is not supported yet");
    } else {
      if (e.starts_with("unix:")) {
        e.remove_prefix(5);
      }
      unix_path_ = std::string(e);
      if (unix_path_.empty()) {
        endpoint_error_ = InvalidArgument("empty API endpoint");
      }
    }
  }

  Result<HttpResponse> Call(std::string_view method, std::string_view target,
                            std::optional<std::string> body, const HttpHeaders& headers);
  Status Watch(std::string_view target, const WatchCallback& on_event,
               const std::stop_token& stop);

 private:
  http::request<http::string_body> MakeRequest(std::string_view method, std::string_view target,
                                               std::optional<std::string> body,
                                               const HttpHeaders& headers) const;
  Deadline NextDeadline() const { return std::chrono::steady_clock::now() + options_.timeout; }
  template <typename Socket>
  Status Stream(Socket& socket, http::request<http::string_body>& req,
                const WatchCallback& on_event, const std::stop_token& stop);
  template <typename Socket>
  Status StreamEvents(Socket& socket, http::response_parser<http::string_body>& parser,
                      const WatchCallback& on_event, const std::stop_token& stop);
  Status StreamLost(beast::error_code ec) const;
  // Closes the socket but keeps the object, so that a pending operation ends (aborted).
  void CloseSocket() {
    beast::error_code ec;
    if (unix_) {
      unix_->close(ec);
    }
    if (tcp_) {
      tcp_->close(ec);
    }
  }

  // Runs one asynchronous operation to completion or until `deadline`; on timeout the socket is
  // closed (cancelling the operation) and net::error::timed_out returned.
  template <typename Start>
  beast::error_code Run(Start&& start, Deadline deadline) {
    std::optional<beast::error_code> result;
    ioc_.restart();
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.run_until(deadline);
    if (!result) {
      Disconnect();
      ioc_.restart();
      ioc_.run();  // let the cancelled operation finish; it refers to `result`
      return net::error::timed_out;
    }
    return *result;
  }

  Status Connect(Deadline deadline);
  void Disconnect() {
    beast::error_code ec;
    if (unix_) {
      unix_->close(ec);
    }
    if (tcp_) {
      tcp_->close(ec);
    }
    unix_.reset();
    tcp_.reset();
    buffer_.clear();
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  bool connected() const { return unix_.has_value() || tcp_.has_value(); }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  int fd() { return unix_ ? unix_->native_handle() : tcp_->native_handle(); }

  template <typename Socket>
  Result<HttpResponse> Exchange(Socket& socket, http::request<http::string_body>& req,
                                Deadline deadline, bool* closed_before_answer);
  Result<HttpResponse> ExchangeAny(http::request<http::string_body>& req, Deadline deadline,
                                   bool* closed_before_answer) {
    return unix_ ? Exchange(*unix_, req, deadline, closed_before_answer)
                 : Exchange(*tcp_, req, deadline, closed_before_answer);
  }

  std::string Where() const { return endpoint_; }

  ApiClientOptions options_;
  std::string endpoint_;
  std::optional<Error> endpoint_error_;
  bool is_unix_ = true;
  std::string unix_path_;
  std::string host_;
  std::string port_;
  net::io_context ioc_;
  std::optional<LocalProtocol::socket> unix_;
  std::optional<Tcp::socket> tcp_;
  beast::flat_buffer buffer_;
};

Status ApiClient::Impl::Connect(Deadline deadline) {
  beast::error_code ec;
  if (is_unix_) {
    unix_.emplace(ioc_);
    ec = Run([&](auto handler) { unix_->async_connect(LocalProtocol::endpoint(unix_path_),
                                                      std::move(handler)); },
             deadline);
  } else {
    Tcp::resolver resolver(ioc_);
    Tcp::resolver::results_type endpoints;
    ec = Run([&](auto handler) {
          resolver.async_resolve(host_, port_, [&endpoints, handler = std::move(handler)](
                                                   beast::error_code e, auto results) mutable {
            endpoints = results;
            handler(e);
          });
        }, deadline);
    if (!ec) {
      tcp_.emplace(ioc_);
      ec = Run([&](auto handler) { net::async_connect(*tcp_, endpoints, std::move(handler)); },
               deadline);
    }
  }
  if (ec) {
    Disconnect();
    return Unavailable("cannot reach gpufleet at " + Where() + ": " + ec.message() +
                       std::string(kReachHint));
  }
  return OkStatus();
}

template <typename Socket>
Result<HttpResponse> ApiClient::Impl::Exchange(Socket& socket,
                                               http::request<http::string_body>& req,
                                               Deadline deadline, bool* closed_before_answer) {
  const beast::error_code wec =
      Run([&](auto handler) { http::async_write(socket, req, std::move(handler)); }, deadline);
  // A write that fails may still have an answer waiting (413 sent before the body was read),
  // so read unless the connection is gone for sure.
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  beast::error_code rec = net::error::timed_out;
  if (wec != net::error::timed_out && connected()) {
    rec = Run([&](auto handler) { http::async_read(socket, buffer_, parser, std::move(handler)); },
              deadline);
  }
  if (rec) {
    *closed_before_answer = rec == http::error::end_of_stream ||
                            wec == net::error::broken_pipe || wec == net::error::connection_reset;
    Disconnect();
    if (rec == net::error::timed_out) {
      return Unavailable("gpufleet at " + Where() + " did not answer within " +
                         std::to_string(options_.timeout.count()) + " ms");
    }
    return Unavailable("lost the connection to gpufleet at " + Where() + ": " +
                       (wec ? wec : rec).message());
  }
  const bool keep_alive = parser.get().keep_alive();
  HttpResponse out = ToHttpResponse(parser.release());
  if (!keep_alive) {
    Disconnect();
  }
  return out;
}

http::request<http::string_body> ApiClient::Impl::MakeRequest(std::string_view method,
                                                              std::string_view target,
                                                              std::optional<std::string> body,
                                                              const HttpHeaders& headers) const {
  http::request<http::string_body> req;
  req.version(11);
  req.method_string(beast::string_view(method.data(), method.size()));
  req.target(beast::string_view(target.data(), target.size()));
  req.set(http::field::host, is_unix_ ? std::string("localhost") : host_ + ":" + port_);
  req.set(http::field::user_agent, "gpufleet-client/" + std::string(ApiVersion()));
  for (const auto& [name, value] : headers) {
    req.set(name, value);
  }
  if (body) {
    if (!FindHeader(headers, "Content-Type")) {
      req.set(http::field::content_type, "application/json");
    }
    req.body() = std::move(*body);
  }
  req.keep_alive(true);
  req.prepare_payload();
  return req;
}

Result<HttpResponse> ApiClient::Impl::Call(std::string_view method, std::string_view target,
                                           std::optional<std::string> body,
                                           const HttpHeaders& headers) {
  if (endpoint_error_) {
    return *endpoint_error_;
  }
  auto req = MakeRequest(method, target, std::move(body), headers);
  const Deadline deadline = NextDeadline();
  bool reused = connected();
  if (reused && IsStale(fd())) {
    Disconnect();
    reused = false;
  }
  for (int attempt = 0;; ++attempt) {
    if (!connected()) {
      GF_TRY(Connect(deadline));
    }
    bool closed_before_answer = false;
    auto result = ExchangeAny(req, deadline, &closed_before_answer);
    // The server may close an idle kept-alive connection just as we reuse it; only then, and
    // only for requests that are safe to repeat, try once more on a fresh connection.
    if (result.ok() || !reused || attempt > 0 || !closed_before_answer ||
        !IsIdempotent(method)) {
      return result;
    }
    reused = false;
  }
}

Status ApiClient::Impl::Watch(std::string_view target, const WatchCallback& on_event,
                              const std::stop_token& stop) {
  if (endpoint_error_) {
    return *endpoint_error_;
  }
  Disconnect();  // the stream needs the connection to itself, until it ends
  Status status = OkStatus();
  {
    // Another thread's stop closes the socket from inside this thread's Run(), which ends the
    // pending connect or read; posting is the one thread-safe way into the io_context.
    const std::stop_callback on_stop(stop, [this] { net::post(ioc_, [this] { CloseSocket(); }); });
    if (!stop.stop_requested()) {
      status = Connect(NextDeadline());
    }
    if (status.ok() && connected() && !stop.stop_requested()) {
      auto req = MakeRequest("GET", target, std::nullopt, {});
      status = unix_ ? Stream(*unix_, req, on_event, stop) : Stream(*tcp_, req, on_event, stop);
    }
  }
  Disconnect();
  ioc_.restart();
  ioc_.poll();  // run a close posted by a late stop now, not on a later connection
  return stop.stop_requested() ? OkStatus() : status;
}

Status ApiClient::Impl::StreamLost(beast::error_code ec) const {
  if (ec == net::error::timed_out) {
    return Unavailable("the watch stream from gpufleet at " + Where() + " was silent for " +
                       std::to_string(options_.timeout.count()) +
                       " ms (not even a keepalive): connection lost");
  }
  return Unavailable("lost the watch stream from gpufleet at " + Where() + ": " + ec.message());
}

// Sends the request and reads the answer's header: an event stream is followed; anything else
// is read whole and becomes the server's error.
template <typename Socket>
Status ApiClient::Impl::Stream(Socket& socket, http::request<http::string_body>& req,
                               const WatchCallback& on_event, const std::stop_token& stop) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  beast::error_code ec =
      Run([&](auto handler) { http::async_write(socket, req, std::move(handler)); },
          NextDeadline());
  if (!ec) {
    ec = Run([&](auto handler) {
           http::async_read_header(socket, buffer_, parser, std::move(handler));
         }, NextDeadline());
  }
  if (ec) {
    return StreamLost(ec);
  }
  const auto content_type = parser.get()[http::field::content_type];
  if (parser.get().result_int() == 200 && content_type.starts_with("text/event-stream")) {
    return StreamEvents(socket, parser, on_event, stop);
  }
  ec = Run([&](auto handler) { http::async_read(socket, buffer_, parser, std::move(handler)); },
           NextDeadline());
  if (ec) {
    return StreamLost(ec);
  }
  const HttpResponse response = ToHttpResponse(parser.release());
  if (response.status < 200 || response.status > 299) {
    return ErrorFromResponse(response);
  }
  return Internal("gpufleet at " + Where() + " answered a watch with Content-Type \"" +
                  response.Header("Content-Type").value_or("") +
                  "\" instead of text/event-stream (is the target a watchable list?)");
}

// Feeds the body to an SseParser as it arrives. The body's string is emptied after each read:
// the parser appends to it, so a stream of any length takes the memory of one read.
template <typename Socket>
Status ApiClient::Impl::StreamEvents(Socket& socket,
                                     http::response_parser<http::string_body>& parser,
                                     const WatchCallback& on_event, const std::stop_token& stop) {
  parser.body_limit(boost::none);  // endless by design; SseParser bounds a line instead
  SseParser sse;
  const auto deliver = [&on_event](const SseEvent& e) { return on_event(e.event, e.data); };
  for (;;) {
    std::string& body = parser.get().body();
    const SseFeedResult fed = sse.Feed(body, deliver);
    body.clear();
    if (fed == SseFeedResult::kStopped || stop.stop_requested()) {
      return OkStatus();
    }
    if (fed == SseFeedResult::kTooLong) {
      return Internal("gpufleet at " + Where() + " sent a watch event line over 64 MiB");
    }
    if (parser.is_done()) {
      return OkStatus();  // the server ended the stream (last chunk)
    }
    const beast::error_code ec = Run([&](auto handler) {
      http::async_read_some(socket, buffer_, parser, std::move(handler));
    }, NextDeadline());
    if (ec && !stop.stop_requested()) {
      return StreamLost(ec);
    }
  }
}

ApiClient::ApiClient(std::string endpoint, ApiClientOptions options)
    : endpoint_(std::move(endpoint)), impl_(std::make_unique<Impl>(endpoint_, options)) {}

ApiClient::~ApiClient() = default;

Result<HttpResponse> ApiClient::Call(std::string_view method, std::string_view target,
                                     std::optional<std::string> body,
                                     const HttpHeaders& headers) {
  try {
    return impl_->Call(method, target, std::move(body), headers);
  } catch (const std::exception& e) {  // library boundary (bad_alloc, Beast)
    return Internal(std::string("API client: ") + e.what());
  }
}

Status ApiClient::Watch(std::string_view target, const WatchCallback& on_event,
                        const std::stop_token& stop) {
  try {
    return impl_->Watch(target, on_event, stop);
  } catch (const std::exception& e) {  // library boundary (bad_alloc, Beast, the callback's)
    return Internal(std::string("API client watch: ") + e.what());
  }
}

Result<nlohmann::json> ApiClient::CallJson(std::string_view method, std::string_view target,
                                           const std::optional<nlohmann::json>& body) {
  std::optional<std::string> text;
  if (body) {
    text = body->dump();
  }
  GF_ASSIGN_OR_RETURN(const HttpResponse response, Call(method, target, std::move(text)));
  if (response.status < 200 || response.status > 299) {
    return ErrorFromResponse(response);
  }
  if (response.body.empty()) {
    return nlohmann::json();
  }
  nlohmann::json parsed = nlohmann::json::parse(response.body, nullptr, false);
  if (parsed.is_discarded()) {
    return Internal("gpufleet at " + endpoint_ + " answered " + std::string(method) + " " +
                    std::string(target) + " with a body that is not JSON");
  }
  return parsed;
}

Error ErrorFromResponse(const HttpResponse& response) {
  const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  if (auto error = ErrorFromJson(body)) {
    return Error{error->code.value_or(ErrorCodeForHttpStatus(response.status)), error->message};
  }
  std::string text = response.body.substr(0, 200);
  return Error{ErrorCodeForHttpStatus(response.status),
               "gpufleet answered HTTP " + std::to_string(response.status) +
                   (text.empty() ? std::string() : ": " + text)};
}

}  // namespace gf
