// Server-sent events (the text/event-stream format of the WHATWG HTML standard, "Server-sent
// events"): the framing of the API's watch streams (GET jobs/gpus/nodes?watch=1). The parser
// also reads the other framing a client follows: the Kubernetes API's watches, one JSON object
// per line (WatchFraming::kJsonLines).
// FormatSseEvent/FormatSseComment write the server's side; SseParser reads a byte stream,
// split anyhow, back into events on the client's side.
//
// Plain functions and a plain value type; an SseParser belongs to one reader thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace gf {

struct SseEvent {
  std::string event;  // the "event:" field; "message" when the stream named none
  std::string data;   // the "data:" lines joined with '\n'
};

// "event: NAME\ndata: LINE\n\n", one data: line per line of `data`, so that a newline inside
// `data` survives the framing. REQUIRES: `event` has no newline.
std::string FormatSseEvent(std::string_view event, std::string_view data);

// ": TEXT\n\n": a comment, which readers ignore. Sent on idle streams so that the client (and
// any proxy between) can tell a quiet stream from a dead connection.
std::string FormatSseComment(std::string_view text);

// How a watch stream frames its events.
enum class WatchFraming {
  kServerSentEvents,  // text/event-stream: gpufleet's own watches
  kJsonLines,         // application/json, one object per line: Kubernetes' (kube/kube_api_watch.h)
};

enum class SseFeedResult {
  kMore,     // every complete event was delivered; feed the next bytes
  kStopped,  // the callback returned false; the rest of the bytes were not read
  kTooLong,  // a line exceeded the parser's limit (a broken or hostile stream)
};

class SseParser {
 public:
  // `max_line_bytes` bounds the memory one unfinished line (and so one event's data) may take.
  // kJsonLines: every non-empty line is an event of its own ("message", the line as data).
  explicit SseParser(WatchFraming framing = WatchFraming::kServerSentEvents,
                     std::size_t max_line_bytes = std::size_t{64} << 20)
      : framing_(framing), max_line_bytes_(max_line_bytes) {}

  // Consumes `bytes`, calling `on_event` for each event they complete (a blank line ends an
  // event; one without data is dropped, as the standard says). Lines end with LF or CRLF.
  // Comments (":...") and the fields id and retry are ignored.
  SseFeedResult Feed(std::string_view bytes, const std::function<bool(const SseEvent&)>& on_event);

 private:
  // Applies one complete line (without its line end); false when on_event asked to stop.
  bool OnLine(std::string_view line, const std::function<bool(const SseEvent&)>& on_event);

  WatchFraming framing_;
  std::size_t max_line_bytes_;
  std::string line_;  // the unfinished line carried over from the previous Feed
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace gf
