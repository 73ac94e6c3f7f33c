// Inline SVG for files that must stand alone (no scripts, no external resources): the few
// primitives `gpufleet report`'s HTML charts are drawn with, and a line chart
// (`gpufleet sim --svg`: utilisation and queue length over time, one line per policy).
//
// Every text goes through Escape, so a name like "<script>" is shown, never run. Numbers are
// written with one decimal (SVG user units). Pure functions: safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gf::svg {

// &, <, >, " and ' as entities: safe inside HTML text, SVG text and attribute values.
std::string Escape(std::string_view text);
// One decimal, as SVG coordinates are written: "12.5".
std::string Num(double v);
// An <svg> start tag of that size, its viewBox the same (the page may scale it).
std::string Open(double width, double height);
// <rect class=…> with a tooltip (<title>); negative sizes are drawn as 0. A non-empty `value`
// is written as data-value: the figure the bar stands for, exact, for a reader (or a test) that
// should not have to measure the bar.
std::string Rect(std::string_view cls,
                 double x,
                 double y,
                 double width,
                 double height,
                 std::string_view tip,
                 std::string_view value = {});
// <text>; `anchor` is start, middle or end.
std::string Text(double x, double y, std::string_view text, std::string_view anchor = "start");
// <line class=…>.
std::string Line(std::string_view cls, double x1, double y1, double x2, double y2);

// A "nice" axis step (1, 2 or 5 x 10^k) that cuts `range` into about `parts`; 1 for an empty
// range.
double NiceStep(double range, int parts);
// The top of an axis from 0 that holds `largest`: a whole number of NiceStep(largest, parts),
// at least one step (an axis of nothing still has a scale).
double NiceTop(double largest, int parts);
// A tick label: whole numbers plain, others with up to two significant digits ("0.25").
std::string Tick(double v);

// One entry of a legend: a swatch drawn with the bars' class, and what it means.
struct LegendItem {
  std::string cls;
  std::string label;
};
// The entries in one row from (x, y) (the swatches' top), each swatch followed by its label.
// Drawn inside the chart, so that a printed or pasted chart keeps its key.
std::string Legend(const std::vector<LegendItem>& items, double x, double y);

// One line of a chart: y over x, drawn in the order given.
struct Series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;  // as many as x
};

struct LineChart {
  std::string title;
  std::string x_label;  // under the x axis ("days")
  std::string y_unit;   // after each y tick: "%", "" for plain counts
  double y_max = 0;     // the top of the y axis; 0: the largest y, rounded up
  std::vector<Series> series;
};

// The chart as an SVG group (<g>) whose plot fills `width` x `height` from (left, top), with
// room left of it for y ticks and under it for x ticks; a legend names each series in its
// colour (a fixed palette, the series' order). Axis lines have class "axis".
std::string DrawLineChart(
    const LineChart& chart, double left, double top, double width, double height);

}  // namespace gf::svg
