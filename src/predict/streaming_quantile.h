// A streaming estimate of one quantile (the median, the 90th percentile) of a series of values,
// in constant memory and constant time per value: the P-square algorithm (Jain and Chlamtac,
// "The P2 algorithm for dynamic calculation of quantiles and histograms without storing
// observations", CACM 28(10), 1985). Five markers track the minimum, the quantile, the maximum
// and two points between; each new value moves the markers' positions, and a marker that has
// drifted from where it should be is moved by a piecewise-parabolic step. Until five values
// have come the quantile is computed exactly from them.
//
// Why not a window of the last N runs, sorted: a job family that runs thousands of times would
// cost O(N) memory and time per update, and the predictor updates at every job end on the
// controller's state thread (issue #22: under 5 microseconds).
//
// Plain value type; not thread-safe (the predictor's owner serialises updates).
#pragma once

#include <array>
#include <cstdint>

namespace gf {

class StreamingQuantile {
 public:
  // REQUIRES: 0 < p < 1.
  explicit StreamingQuantile(double p);

  void Add(double x);

  // The estimate of the p-quantile of every value added; 0 before the first.
  double Value() const;
  std::int64_t Count() const { return count_; }

 private:
  double Parabolic(int i, double d) const;
  double Linear(int i, int d) const;

  double p_;
  std::int64_t count_ = 0;
  std::array<double, 5> height_{};    // marker heights (the first five values, sorted, at first)
  std::array<double, 5> position_{};  // actual marker positions, 1-based
  std::array<double, 5> desired_{};   // where each marker should be
  std::array<double, 5> step_{};      // how far `desired_` moves per value
};

}  // namespace gf
