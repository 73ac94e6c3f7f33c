#include "core/svg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf::svg {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SvgTest, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(Escape("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
}

TEST(SvgTest, PrimitivesWriteOneDecimalAndEscapeText) {
  EXPECT_EQ(Open(100, 50.25),
            "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"100.0\" "
            "height=\"50.2\" viewBox=\"0 0 100.0 50.2\">");
  EXPECT_EQ(Rect("used", 1, 2, -3, 4, "a<b"),
            "<rect class=\"used\" x=\"1.0\" y=\"2.0\" width=\"0.0\" height=\"4.0\">"
            "<title>a&lt;b</title></rect>");
  EXPECT_EQ(Rect("used", 0, 0, 1, 1, "t", "0.25"),
            "<rect class=\"used\" x=\"0.0\" y=\"0.0\" width=\"1.0\" height=\"1.0\" "
            "data-value=\"0.25\"><title>t</title></rect>");
  EXPECT_EQ(Text(1, 2, "x&y", "end"),
            "<text x=\"1.0\" y=\"2.0\" text-anchor=\"end\">x&amp;y</text>");
  EXPECT_EQ(Line("axis", 0, 1, 2, 3),
            "<line class=\"axis\" x1=\"0.0\" y1=\"1.0\" x2=\"2.0\" y2=\"3.0\"/>");
}

TEST(SvgTest, LineChartScalesEachSeriesIntoThePlot) {
  // x 0..10 over 100 units from left 10; y 0..50 (y_max) over 100 units from top 20.
  const LineChart chart{.title = "queue",
                        .x_label = "hours",
                        .y_unit = "%",
                        .y_max = 50,
                        .series = {Series{.name = "fifo", .x = {0, 10}, .y = {0, 50}},
                                   Series{.name = "<las>", .x = {0, 5, 10}, .y = {25, 80, 0}}}};
  const std::string g = DrawLineChart(chart, 10, 20, 100, 100);
  EXPECT_THAT(g, HasSubstr("points=\"10.0,120.0 110.0,20.0\""));
  // Above y_max is drawn at the top.
  EXPECT_THAT(g, HasSubstr("points=\"10.0,70.0 60.0,20.0 110.0,120.0\""));
  EXPECT_THAT(g, HasSubstr("&lt;las&gt;"));
  EXPECT_THAT(g, Not(HasSubstr("<las>")));
  // Ticks of 20 up to the top, none above it.
  EXPECT_THAT(g, HasSubstr(">40%</text>"));
  EXPECT_THAT(g, Not(HasSubstr(">60%</text>")));
  EXPECT_THAT(g, HasSubstr(">hours</text>"));
}

TEST(SvgTest, LineChartWithoutYMaxRoundsTheLargestValueUp) {
  const LineChart chart{.title = "",
                        .x_label = "",
                        .y_unit = "",
                        .y_max = 0,
                        .series = {Series{.name = "a", .x = {0, 1}, .y = {0, 37}}}};
  // Ticks of 10: the axis tops at 40.
  EXPECT_THAT(DrawLineChart(chart, 0, 0, 100, 100), HasSubstr(">40</text>"));
}

TEST(SvgTest, AxesEndOnANiceTopAboveTheLargestValue) {
  EXPECT_EQ(NiceStep(4, 4), 1);
  EXPECT_EQ(NiceStep(2, 5), 0.5);
  EXPECT_EQ(NiceTop(4, 4), 4);  // exactly on a step: no empty step above
  EXPECT_EQ(NiceTop(3.2, 4), 4);
  EXPECT_EQ(NiceTop(0.37, 5), 0.4);
  EXPECT_EQ(NiceTop(0, 4), 1);  // nothing to show still has a scale
  EXPECT_EQ(Tick(0.25), "0.25");
  EXPECT_EQ(Tick(40), "40");
}

TEST(SvgTest, LegendDrawsEachSwatchInItsClassBeforeItsLabel) {
  const std::string g = Legend({{"used", "used"}, {"alloc", "a<b"}}, 10, 4);
  EXPECT_THAT(g, HasSubstr("<rect class=\"used\" x=\"10.0\" y=\"4.0\""));
  EXPECT_THAT(g, HasSubstr(">a&lt;b</text>"));
  // The second swatch starts after the first label.
  const std::string second = "<rect class=\"alloc\" x=\"";
  const std::size_t at = g.find(second);
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stod(g.substr(at + second.size())), 10 + 10 + 4 + 6.5 * 4);
}

}  // namespace
}  // namespace gf::svg
