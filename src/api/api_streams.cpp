// The streams a connection can become after its first request: an agent's command stream
// (pushed commands) and a watch stream (a list re-read and sent when it changes), both
// chunked server-sent events. Apart from the plain request/answer path (api_session.cpp)
// because they outlive the request that opened them and run on the session's timer.
#include <array>
#include <charconv>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "api/agent_wire.h"
#include "api/api_session.h"
#include "api/sse.h"

namespace gf {
namespace {

// HTTP/1.1 chunked framing (RFC 9112, 7.1): the size in hex, CRLF, the bytes, CRLF. A watch
// stream is chunked so that the server can end it cleanly (kLastChunk) and a client can tell
// that from a lost connection.
void AppendChunk(std::string& out, std::string_view data) {
  std::array<char, 16> size{};
  const auto [end, ec] = std::to_chars(size.data(), size.data() + size.size(), data.size(), 16);
  out.append(size.data(), end);
  out += "\r\n";
  out += data;
  out += "\r\n";
}
constexpr std::string_view kLastChunk = "0\r\n\r\n";

// The status line and headers of a watch stream; its body is chunks of server-sent events.
std::string WatchStreamHeader() {
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  res.set(http::field::server, "gpufleet/" + std::string(ApiVersion()));
  res.chunked(true);
  res.keep_alive(false);  // the stream ends with the connection
  std::ostringstream out;
  out << res.base();
  return out.str();
}

// A JSON response body as one `data:` line: JsonResponse ends it with a newline.
std::string WithoutTrailingNewline(std::string body) {
  while (!body.empty() && body.back() == '\n') {
    body.pop_back();
  }
  return body;
}

}  // namespace

// ---- Agent command streams (routes.h IsCommandStream). Pushed, not polled: the stream's
// waker posts Pump to the strand when the controller queues a command, so a launch reaches
// its agent within a write's time. One write at a time; a keepalive when idle. ----

template <typename Socket>
void Session<Socket>::StartCommandStream(HttpRequest request) {
  OnWorker(
      [request = std::move(request)](Session& self) { return self.OpenCommandStream(request); },
      [](Session& self, CommandStreamOpening opening) {
        self.OnCommandStreamOpen(std::move(opening));
      });
}

template <typename Socket>
typename Session<Socket>::CommandStreamOpening Session<Socket>::OpenCommandStream(
    const HttpRequest& request) {  // on a worker
  CommandStreamOpening opening;
  Caller caller = caller_;
  if constexpr (kTokens) {
    Result<Caller> from_token = TokenCaller(request);
    if (!from_token.ok()) {
      opening.stream = PermissionDenied(from_token.error().message);
      return opening;
    }
    caller = std::move(*from_token);
  }
  // A node agent has no per-client limit (KeyFor), but its stream counts under max_watches.
  ClientLimits::Admission admission =
      server_.limits().Admit(ClientLimits::Resource::kStream, KeyFor(caller));
  if (admission.refused) {
    opening.refused = RefusalResponse("too many open streams", *admission.refused);
    return opening;
  }
  opening.slot = std::move(admission.lease);
  opening.stream = server_.router().OpenCommandStream(caller, request);
  return opening;
}

template <typename Socket>
void Session<Socket>::OnCommandStreamOpen(CommandStreamOpening opening) {
  if (opening.refused) {
    Write(std::move(*opening.refused));
    return;
  }
  if (!opening.stream.ok()) {
    Write(ErrorResponse(opening.stream.error()));
    return;
  }
  if (!Lowest().is_open()) {
    return;
  }
  commands_.emplace();
  commands_->slot = std::move(opening.slot);
  commands_->stream = std::move(*opening.stream);
  std::weak_ptr<Session> weak = this->shared_from_this();
  commands_->stream->SetWaker([weak] {
    if (auto self = weak.lock()) {
      net::post(self->socket_.get_executor(), [self] { self->PumpCommands(false); });
    }
  });
  commands_->out = WatchStreamHeader();
  Drain(socket_);  // the agent sends nothing more on this connection: a read notices when it leaves
  PumpCommands(false);
}

template <typename Socket>
void Session<Socket>::PumpCommands(bool keepalive) {
  if (!commands_ || !commands_->stream || !Lowest().is_open()) {
    return;
  }
  if (commands_->writing) {
    return;  // the write's completion pumps again
  }
  bool last = false;
  for (const AgentCommand& command : commands_->stream->Take()) {
    AppendChunk(commands_->out, FormatSseEvent("command", WireDump(AgentCommandToJson(command))));
  }
  if (commands_->stream->Closed()) {
    commands_->out += kLastChunk;  // a newer session, or the server stops
    last = true;
  } else if (commands_->out.empty() && keepalive) {
    AppendChunk(commands_->out, FormatSseComment("keepalive"));
  }
  if (commands_->out.empty()) {
    ArmCommandKeepalive();
    return;
  }
  commands_->writing = true;
  commands_->sending = std::move(commands_->out);
  commands_->out.clear();
  ArmTimer(server_.options().read_timeout);  // an agent that stops reading is dropped
  net::async_write(socket_,
                   net::buffer(commands_->sending),
                   [self = this->shared_from_this(), last](beast::error_code ec, std::size_t) {
                     self->timer_.cancel();
                     self->commands_->writing = false;
                     if (ec || last) {
                       self->Close();
                     } else {
                       self->PumpCommands(false);
                     }
                   });
}

template <typename Socket>
void Session<Socket>::ArmCommandKeepalive() {
  timer_.expires_after(server_.options().watch_keepalive);
  timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
    if (!ec) {
      self->PumpCommands(true);
    }
  });
}

// ---- Watch streams (api_server.h). One step at a time on the strand: re-read on a worker,
// write if changed (or a keepalive is due), wait watch_interval on the timer, again. ----

template <typename Socket>
void Session<Socket>::StartWatch(std::string event, HttpRequest request) {
  watch_.emplace(std::move(event), std::move(request));
  WatchTick();
}

// The first read takes the watch's slot (on the worker, where the caller is known).
template <typename Socket>
void Session<Socket>::WatchTick() {
  HandleOnWorker(watch_->request,
                 watch_->streaming ? Turn::kWatchTick : Turn::kWatchOpen,
                 [](Session& self, Answer answer) { self.OnWatchRead(std::move(answer)); });
}

template <typename Socket>
void Session<Socket>::OnWatchRead(Answer answer) {
  HttpResponse& response = answer.response;
  if (!Lowest().is_open()) {
    return;  // the client left, or Stop(), while the worker read
  }
  if (!watch_->streaming && response.status != 200) {
    watch_.reset();  // the plain GET's answer (401, 400, 429, 503...); the connection goes on
    Write(std::move(response));
    return;
  }
  std::string out;
  if (!watch_->streaming) {
    watch_->streaming = true;
    watch_->slot = std::move(answer.slot);
    out = WatchStreamHeader();
    Drain(socket_);  // the client sends nothing more: a pending read notices when it leaves
  }
  if (response.status != 200) {  // e.g. the controller became unavailable: say so and end
    AppendChunk(out, FormatSseEvent("error", WithoutTrailingNewline(std::move(response.body))));
    out += kLastChunk;
    WatchWrite(std::move(out), true);
    return;
  }
  std::string data = WithoutTrailingNewline(std::move(response.body));
  if (out.empty() && data == watch_->last_data) {  // unchanged: at most a keepalive
    if (std::chrono::steady_clock::now() - watch_->last_write < server_.options().watch_keepalive) {
      ScheduleWatchTick();
      return;
    }
    AppendChunk(out, FormatSseComment("keepalive"));
  } else {
    AppendChunk(out, FormatSseEvent(watch_->event, data));
    watch_->last_data = std::move(data);
  }
  WatchWrite(std::move(out), false);
}

template <typename Socket>
void Session<Socket>::WatchWrite(std::string bytes, bool last) {
  watch_->out = std::move(bytes);
  watch_->last_write = std::chrono::steady_clock::now();
  ArmTimer(server_.options().read_timeout);  // a client that stops reading is dropped
  net::async_write(socket_,
                   net::buffer(watch_->out),
                   [self = this->shared_from_this(), last](beast::error_code ec, std::size_t) {
                     self->timer_.cancel();
                     if (ec || last) {
                       self->Close();
                     } else {
                       self->ScheduleWatchTick();
                     }
                   });
}

template <typename Socket>
void Session<Socket>::ScheduleWatchTick() {
  timer_.expires_after(server_.options().watch_interval);
  timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
    if (!ec && self->Lowest().is_open()) {
      self->WatchTick();
    }
  });
}

// The entry points from a session's requests (OnRead), for each kind of connection; the rest
// of this file is instantiated from them.
template void Session<LocalProtocol::socket>::StartCommandStream(HttpRequest);
template void Session<LocalProtocol::socket>::StartWatch(std::string, HttpRequest);
template void Session<Tcp::socket>::StartCommandStream(HttpRequest);
template void Session<Tcp::socket>::StartWatch(std::string, HttpRequest);
template void Session<TlsStream>::StartCommandStream(HttpRequest);
template void Session<TlsStream>::StartWatch(std::string, HttpRequest);

}  // namespace gf
