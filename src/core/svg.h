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
// <rect class=…> with a tooltip (<title>); negative sizes are drawn as 0.
std::string Rect(
    std::string_view cls, double x, double y, double width, double height, std::string_view tip);
// <text>; `anchor` is start, middle or end.
std::string Text(double x, double y, std::string_view text, std::string_view anchor = "start");
// <line class=…>.
std::string Line(std::string_view cls, double x1, double y1, double x2, double y2);

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
