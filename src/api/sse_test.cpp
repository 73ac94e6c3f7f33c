#include "api/sse.h"

#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

struct Collector {
  std::vector<SseEvent> events;
  int stop_after = -1;  // return false once this many events were seen
  std::function<bool(const SseEvent&)> Callback() {
    return [this](const SseEvent& e) {
      events.push_back(e);
      return stop_after < 0 || static_cast<int>(events.size()) < stop_after;
    };
  }
};

TEST(SseTest, FormatsEventsWithOneDataLinePerLine) {
  EXPECT_EQ(FormatSseEvent("gpus", "{\"gpus\":[]}"), "event: gpus\ndata: {\"gpus\":[]}\n\n");
  EXPECT_EQ(FormatSseEvent("x", "a\nb"), "event: x\ndata: a\ndata: b\n\n");
  EXPECT_EQ(FormatSseComment("keepalive"), ": keepalive\n\n");
}

TEST(SseTest, RoundTripsAcrossEveryByteSplit) {
  const std::string stream = FormatSseComment("keepalive") + FormatSseEvent("jobs", "{\"a\":1}") +
                             FormatSseEvent("gpus", "line1\nline2");
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser parser;
    Collector c;
    ASSERT_EQ(parser.Feed(std::string_view(stream).substr(0, cut), c.Callback()),
              SseFeedResult::kMore);
    ASSERT_EQ(parser.Feed(std::string_view(stream).substr(cut), c.Callback()),
              SseFeedResult::kMore);
    ASSERT_EQ(c.events.size(), 2U) << "cut at " << cut;
    EXPECT_EQ(c.events[0].event, "jobs");
    EXPECT_EQ(c.events[0].data, "{\"a\":1}");
    EXPECT_EQ(c.events[1].event, "gpus");
    EXPECT_EQ(c.events[1].data, "line1\nline2");
  }
}

TEST(SseTest, CrlfDefaultNameAndEmptyEvents) {
  SseParser parser;
  Collector c;
  // No event name → "message"; a blank line without data dispatches nothing; no space after
  // the colon is fine too; unknown fields (id, retry) are ignored.
  EXPECT_EQ(parser.Feed("data:x\r\n\r\n\r\nevent: e\r\nid: 3\r\nretry: 10\r\n\r\n", c.Callback()),
            SseFeedResult::kMore);
  ASSERT_EQ(c.events.size(), 1U);
  EXPECT_EQ(c.events[0].event, "message");
  EXPECT_EQ(c.events[0].data, "x");
}

TEST(SseTest, StopsWhenTheCallbackSaysSo) {
  SseParser parser;
  Collector c;
  c.stop_after = 1;
  EXPECT_EQ(parser.Feed(FormatSseEvent("a", "1") + FormatSseEvent("b", "2"), c.Callback()),
            SseFeedResult::kStopped);
  ASSERT_EQ(c.events.size(), 1U);
  EXPECT_EQ(c.events[0].event, "a");
}

TEST(SseTest, BoundsTheLineLength) {
  SseParser parser(WatchFraming::kServerSentEvents, 16);
  Collector c;
  EXPECT_EQ(parser.Feed("data: 0123456789", c.Callback()), SseFeedResult::kMore);
  EXPECT_EQ(parser.Feed("abcdef", c.Callback()), SseFeedResult::kTooLong);
  EXPECT_TRUE(c.events.empty());
}

// Kubernetes' watch framing: each line one JSON object, split anywhere by the network; blank
// lines and a CRLF end are nothing; a line is delivered whole, never its halves.
TEST(SseTest, JsonLinesFramingDeliversEachLineWhole) {
  const std::string stream =
      "{\"type\":\"ADDED\",\"object\":{}}\n\r\n{\"type\":\"DELETED\"}\r\n{\"type\":\"BOOKMARK\"}\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser parser(WatchFraming::kJsonLines);
    Collector c;
    ASSERT_EQ(parser.Feed(std::string_view(stream).substr(0, cut), c.Callback()),
              SseFeedResult::kMore);
    ASSERT_EQ(parser.Feed(std::string_view(stream).substr(cut), c.Callback()),
              SseFeedResult::kMore);
    ASSERT_EQ(c.events.size(), 3U) << "cut at " << cut;
    EXPECT_EQ(c.events[0].data, "{\"type\":\"ADDED\",\"object\":{}}");
    EXPECT_EQ(c.events[1].data, "{\"type\":\"DELETED\"}");
    EXPECT_EQ(c.events[2].data, "{\"type\":\"BOOKMARK\"}");
  }
  // "data:" means nothing in this framing: the line is the event.
  SseParser parser(WatchFraming::kJsonLines);
  Collector c;
  parser.Feed("data: x\n\n", c.Callback());
  ASSERT_EQ(c.events.size(), 1U);
  EXPECT_EQ(c.events[0].data, "data: x");
}

}  // namespace
}  // namespace gf
