#include "core/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace gf::svg {
namespace {

// Colour-blind-safe (Okabe-Ito), distinct in print.
constexpr std::array<const char*, 8> kPalette = {
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000"};

}  // namespace

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

double NiceStep(double range, int parts) {
  if (!(range > 0) || parts < 1) {
    return 1;
  }
  const double raw = range / parts;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) {
      return m * magnitude;
    }
  }
  return 10 * magnitude;
}

double NiceTop(double largest, int parts) {
  const double step = NiceStep(largest, parts);
  return std::max(step, std::ceil(largest / step - 1e-9) * step);
}

std::string Tick(double v) {
  char text[32];
  if (std::abs(v - std::round(v)) < 1e-9) {
    std::snprintf(text, sizeof text, "%.0f", v);
  } else {
    std::snprintf(text, sizeof text, "%.2g", v);
  }
  return text;
}

std::string Open(double width, double height) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"" + Num(width) +
         "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) +
         "\">";
}

std::string Rect(std::string_view cls,
                 double x,
                 double y,
                 double width,
                 double height,
                 std::string_view tip,
                 std::string_view value) {
  std::string out = "<rect class=\"" + std::string(cls) + "\" x=\"" + Num(x) + "\" y=\"" + Num(y) +
                    "\" width=\"" + Num(std::max(0.0, width)) + "\" height=\"" +
                    Num(std::max(0.0, height)) + "\"";
  if (!value.empty()) {
    out += " data-value=\"" + Escape(value) + "\"";
  }
  return out + "><title>" + Escape(tip) + "</title></rect>";
}

std::string Text(double x, double y, std::string_view text, std::string_view anchor) {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + std::string(anchor) +
         "\">" + Escape(text) + "</text>";
}

std::string Line(std::string_view cls, double x1, double y1, double x2, double y2) {
  return "<line class=\"" + std::string(cls) + "\" x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) +
         "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) + "\"/>";
}

std::string Legend(const std::vector<LegendItem>& items, double x, double y) {
  // About 6.5 units a character at the charts' 11-unit font: enough that labels never touch.
  constexpr double kCharWidth = 6.5;
  constexpr double kSwatch = 10;
  std::string out = "<g class=\"legend\">";
  for (const LegendItem& item : items) {
    out += "<rect class=\"" + Escape(item.cls) + "\" x=\"" + Num(x) + "\" y=\"" + Num(y) +
           "\" width=\"" + Num(kSwatch) + "\" height=\"" + Num(kSwatch) + "\"/>" +
           Text(x + kSwatch + 4, y + kSwatch - 1, item.label);
    x += kSwatch + 4 + kCharWidth * static_cast<double>(item.label.size()) + 16;
  }
  return out + "</g>";
}

std::string DrawLineChart(
    const LineChart& chart, double left, double top, double width, double height) {
  double x_min = 0;
  double x_max = 0;
  double y_top = chart.y_max;
  bool any = false;
  for (const Series& s : chart.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      x_min = any ? std::min(x_min, s.x[i]) : s.x[i];
      x_max = any ? std::max(x_max, s.x[i]) : s.x[i];
      any = true;
      if (chart.y_max <= 0) {
        y_top = std::max(y_top, s.y[i]);
      }
    }
  }
  const double y_step = NiceStep(y_top, 4);
  if (chart.y_max <= 0) {
    y_top = std::max(y_step, std::ceil(y_top / y_step) * y_step);
  }
  if (!(x_max > x_min)) {
    x_max = x_min + 1;
  }
  const auto px = [&](double x) {
    return left + width * (x - x_min) / (x_max - x_min);
  };
  const auto py = [&](double y) {
    return top + height * (1 - std::clamp(y / y_top, 0.0, 1.0));
  };
  std::string out = "<g>" + Text(left, top - 8, chart.title);
  // Ticks counted in whole steps (a sum of doubles drifts); no tick above the top.
  for (int i = 0; i * y_step <= y_top * (1 + 1e-9); ++i) {
    const double y = i * y_step;
    out += Line("axis", left, py(y), left + width, py(y)) +
           Text(left - 4, py(y) + 3, Tick(y) + chart.y_unit, "end");
  }
  const double x_step = NiceStep(x_max - x_min, 8);
  const double x_first = std::ceil(x_min / x_step) * x_step;
  for (int i = 0; x_first + i * x_step <= x_max + x_step / 1000; ++i) {
    const double x = x_first + i * x_step;
    out += Line("axis", px(x), top + height, px(x), top + height + 3) +
           Text(px(x), top + height + 13, Tick(x), "middle");
  }
  out += Text(left + width, top + height + 26, chart.x_label, "end");
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const Series& s = chart.series[k];
    const char* colour = kPalette[k % kPalette.size()];
    std::string points;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      points += (points.empty() ? "" : " ") + Num(px(s.x[i])) + "," + Num(py(s.y[i]));
    }
    out += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
           "\" stroke-width=\"1.2\" points=\"" + points + "\"><title>" + Escape(s.name) +
           "</title></polyline>";
    const double legend_y = top + 12 * static_cast<double>(k);
    out += "<rect x=\"" + Num(left + width + 8) + "\" y=\"" + Num(legend_y) +
           "\" width=\"10\" height=\"3\" fill=\"" + colour + "\"/>" +
           Text(left + width + 22, legend_y + 4, s.name);
  }
  return out + "</g>";
}

}  // namespace gf::svg
