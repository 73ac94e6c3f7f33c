#include "api/sse.h"

namespace gf {

std::string FormatSseEvent(std::string_view event, std::string_view data) {
  std::string out = "event: ";
  out += event;
  out += '\n';
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = data.find('\n', start);
    out += "data: ";
    out += data.substr(start, end - start);
    out += '\n';
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  out += '\n';
  return out;
}

std::string FormatSseComment(std::string_view text) {
  std::string out = ": ";
  out += text;
  out += "\n\n";
  return out;
}

SseFeedResult SseParser::Feed(std::string_view bytes,
                              const std::function<bool(const SseEvent&)>& on_event) {
  while (!bytes.empty()) {
    const std::size_t lf = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, lf);
    if (line_.size() + piece.size() > max_line_bytes_) {
      return SseFeedResult::kTooLong;
    }
    if (lf == std::string_view::npos) {
      line_ += piece;  // the line continues in a later Feed
      return SseFeedResult::kMore;
    }
    bytes.remove_prefix(lf + 1);
    bool go_on = true;
    if (line_.empty()) {
      go_on = OnLine(piece, on_event);  // the usual case: no copy
    } else {
      line_ += piece;
      const std::string line = std::move(line_);
      line_.clear();
      go_on = OnLine(line, on_event);
    }
    if (!go_on) {
      return SseFeedResult::kStopped;
    }
  }
  return SseFeedResult::kMore;
}

bool SseParser::OnLine(std::string_view line,
                       const std::function<bool(const SseEvent&)>& on_event) {
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  if (framing_ == WatchFraming::kJsonLines) {
    return line.empty() || on_event(SseEvent{"message", std::string(line)});
  }
  if (line.empty()) {  // end of an event
    SseEvent event{event_.empty() ? "message" : std::move(event_), std::move(data_)};
    const bool had_data = has_data_;
    event_.clear();
    data_.clear();
    has_data_ = false;
    return !had_data || on_event(event);
  }
  if (line.front() == ':') {
    return true;  // comment (keepalive)
  }
  const std::size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  if (field == "event") {
    event_ = value;
  } else if (field == "data") {
    if (has_data_) {
      data_ += '\n';
    }
    data_ += value;
    has_data_ = true;
  }
  return true;
}

}  // namespace gf
