// Internal to gf_api: Session<Socket>, one HTTP connection of the API server, declared here
// because its members are defined in two files: api_session.cpp (reading, authenticating,
// answering requests) and api_streams.cpp (watch streams and agent command streams). Include
// it from those two alone.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "api/api_server_state.h"

namespace gf {

// The answer to something a limit refused (client_limits.h): `what` ("too many open
// watches"), the limit, `fix`, and a Retry-After header.
HttpResponse RefusalResponse(std::string_view what,
                             const Refusal& refusal,
                             std::string_view fix = {});

// The state of a connection that became an agent's command stream (StartCommandStream).
struct CommandStreamState {
  ClientLimits::Lease slot;  // its place under max_watches
  std::shared_ptr<CommandStream> stream;
  bool writing = false;
  std::string out;      // the next bytes to write
  std::string sending;  // the bytes being written
};

// The state of a connection that became a watch stream (see api_server.h).
struct WatchState {
  WatchState(std::string event_name, HttpRequest list_request)
      : event(std::move(event_name)), request(std::move(list_request)) {}
  ClientLimits::Lease slot;  // its place under max_watches, taken with the first read
  std::string event;         // "jobs", "gpus", "nodes"
  HttpRequest request;       // re-handled on every tick: the plain GET of the list
  bool streaming = false;    // the 200 header has gone out
  std::string last_data;     // the list as last sent
  std::chrono::steady_clock::time_point last_write{};
  std::string out;  // the bytes being written
};

// One HTTP connection over `Socket`: a Unix socket, a TCP socket, or TLS over TCP (TlsStream).
// Every member is touched only on the socket's strand, except `caller_`, which the worker
// handling the connection's single in-flight request resolves and reads (the post to the pool
// and back orders those accesses; a watch, too, has one re-read in flight at a time).
template <typename Socket>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Socket>> {
  static constexpr bool kTls = std::is_same_v<Socket, TlsStream>;
  // TCP callers name themselves with a bearer token; Unix ones are who the kernel says.
  static constexpr bool kTokens = !std::is_same_v<Socket, LocalProtocol::socket>;

 public:
  // `peer`: the remote address on TCP, the budget of a request without a valid token ("" on
  // the socket). `connection`: its place under max_connections (none for a refused one).
  Session(ApiServerState& server,
          Socket socket,
          Caller caller,
          std::string peer,
          ClientLimits::Lease connection)
      : server_(server),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        caller_(std::move(caller)),
        peer_(std::move(peer)),
        connection_(std::move(connection)) {}
  ~Session() override {
    if (refusing_) {
      server_.DoneRefusing();
    }
    server_.Unregister(this);
  }

  void Begin();

  void Refuse(const Refusal& refusal);

  void PostClose() override {
    net::post(socket_.get_executor(), [self = this->shared_from_this()] { self->Close(); });
  }

 private:
  // The socket below any TLS: what is opened, shut down and closed.
  auto& Lowest() {
    if constexpr (kTls) {
      return socket_.next_layer();
    } else {
      return socket_;
    }
  }

  // Requests (api_session.cpp).
  void SniffTls();
  void Handshake();
  void RefusePlainHttp();
  void ArmTimer(std::chrono::milliseconds timeout);
  void ReadRequest();
  void OnRead(beast::error_code ec);

  // What a request is to the limits: the client's own (rate limited), the first read of a
  // watch (rate limited, and it takes a watch slot), or a watch's later re-read (the server's
  // doing: free).
  enum class Turn { kRequest, kWatchOpen, kWatchTick };

  // What a worker made of a request: the answer, and the slot a watch took with its first read.
  struct Answer {
    HttpResponse response;
    ClientLimits::Lease slot{};
  };

  void Dispatch(HttpRequest request);

  template <typename Then>
  void HandleOnWorker(HttpRequest request, Turn turn, Then then) {
    OnWorker([request = std::move(request),
              turn](Session& self) { return self.HandleNow(request, turn); },
             std::move(then));
  }

  // Runs `work(session)` on a worker (ClusterService calls block) and comes back to the strand
  // with `then(session, result)`. The work guard keeps the io threads alive until then.
  template <typename Work, typename Then>
  void OnWorker(Work work, Then then) {
    net::post(server_.workers(),
              [self = this->shared_from_this(),
               work = std::move(work),
               then = std::move(then),
               guard = net::make_work_guard(server_.ioc())]() mutable {
                auto result = work(*self);
                net::post(self->socket_.get_executor(),
                          [self, then = std::move(then), result = std::move(result)]() mutable {
                            then(*self, std::move(result));
                          });
              });
  }

  Answer HandleNow(const HttpRequest& request, Turn turn);   // on a worker
  Result<Caller> RequestCaller(const HttpRequest& request);  // on a worker
  ClientKey KeyFor(const Caller& caller) const;
  Result<Caller> TokenCaller(const HttpRequest& request);  // on a worker
  void Write(HttpResponse response);
  void OnWrite(beast::error_code ec);

  // After an early answer (413, 400) the client may still be sending; closing now could reset
  // the connection and destroy our answer before the client reads it. So: half-close, read and
  // discard (from `stream`: the TLS layer, or the socket below it when the client spoke plain
  // HTTP to the TLS port) for a bounded time and size, then close.
  template <typename Stream>
  void Linger(Stream& stream) {
    beast::error_code ec;
    Lowest().shutdown(net::socket_base::shutdown_send, ec);
    ArmTimer(std::min(server_.options().read_timeout, kMaxLinger));
    Drain(stream);
  }

  template <typename Stream>
  void Drain(Stream& stream) {
    stream.async_read_some(
        net::buffer(drain_buf_),
        [self = this->shared_from_this(), &stream](beast::error_code ec, std::size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > kMaxDrainBytes) {
            self->Close();
          } else {
            self->Drain(stream);
          }
        });
  }

  void Close();

  // Agent command streams and watch streams (api_streams.cpp).
  // A command stream being opened: the stream, or the answer that refuses it.
  struct CommandStreamOpening {
    Result<std::shared_ptr<CommandStream>> stream = std::shared_ptr<CommandStream>();
    ClientLimits::Lease slot{};
    std::optional<HttpResponse> refused{};
  };

  void StartCommandStream(HttpRequest request);
  CommandStreamOpening OpenCommandStream(const HttpRequest& request);  // on a worker
  void OnCommandStreamOpen(CommandStreamOpening opening);
  void PumpCommands(bool keepalive);
  void ArmCommandKeepalive();
  void StartWatch(std::string event, HttpRequest request);
  void WatchTick();
  void OnWatchRead(Answer answer);
  void WatchWrite(std::string bytes, bool last);
  void ScheduleWatchTick();

  static constexpr std::size_t kMaxDrainBytes = 64 << 20;
  static constexpr std::chrono::milliseconds kMaxLinger{5000};

  ApiServerState& server_;
  Socket socket_;
  net::steady_timer timer_;
  Caller caller_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  bool keep_alive_ = true;
  bool close_after_ = false;
  std::size_t drained_ = 0;
  std::array<char, 16384> drain_buf_{};
  std::string raw_out_;                         // the plain-HTTP refusal on a TLS port
  std::string peer_;                            // TCP: the remote address; "" on the socket
  ClientLimits::Lease connection_;              // its place under max_connections
  bool refusing_ = false;                       // answering a refusal (counted by StartRefusing)
  std::optional<WatchState> watch_;             // set while the connection is a watch
  std::optional<CommandStreamState> commands_;  // set while it is an agent's command stream
};

}  // namespace gf
