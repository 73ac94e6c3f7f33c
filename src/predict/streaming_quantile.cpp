#include "predict/streaming_quantile.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace gf {

StreamingQuantile::StreamingQuantile(double p) : p_(p) {
  GF_CHECK(p > 0 && p < 1);
  desired_ = {1, 1 + 2 * p, 1 + 4 * p, 3 + 2 * p, 5};
  step_ = {0, p / 2, p, (1 + p) / 2, 1};
  position_ = {1, 2, 3, 4, 5};
}

void StreamingQuantile::Add(double x) {
  if (count_ < 5) {
    height_[static_cast<std::size_t>(count_)] = x;
    ++count_;
    std::sort(height_.begin(), height_.begin() + count_);
    return;
  }
  ++count_;
  // The cell x falls in; the extreme markers follow a new minimum or maximum.
  std::size_t k = 0;
  if (x < height_[0]) {
    height_[0] = x;
    k = 0;
  } else if (x >= height_[4]) {
    height_[4] = std::max(height_[4], x);
    k = 3;
  } else {
    k = 0;
    while (k < 3 && x >= height_[k + 1]) {
      ++k;
    }
  }
  for (std::size_t i = k + 1; i < 5; ++i) {
    position_[i] += 1;
  }
  for (std::size_t i = 0; i < 5; ++i) {
    desired_[i] += step_[i];
  }
  // The three middle markers move one position towards where they should be, when they are a
  // position or more off and the move leaves them strictly between their neighbours.
  for (int i = 1; i <= 3; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const double off = desired_[u] - position_[u];
    if ((off >= 1 && position_[u + 1] - position_[u] > 1) ||
        (off <= -1 && position_[u - 1] - position_[u] < -1)) {
      const int d = off >= 0 ? 1 : -1;
      const double candidate = Parabolic(i, d);
      height_[u] =
          height_[u - 1] < candidate && candidate < height_[u + 1] ? candidate : Linear(i, d);
      position_[u] += d;
    }
  }
}

double StreamingQuantile::Parabolic(int i, double d) const {
  const auto u = static_cast<std::size_t>(i);
  const double n_prev = position_[u - 1];
  const double n = position_[u];
  const double n_next = position_[u + 1];
  return height_[u] + d / (n_next - n_prev) *
                          ((n - n_prev + d) * (height_[u + 1] - height_[u]) / (n_next - n) +
                           (n_next - n - d) * (height_[u] - height_[u - 1]) / (n - n_prev));
}

double StreamingQuantile::Linear(int i, int d) const {
  const auto u = static_cast<std::size_t>(i);
  const std::size_t v = d > 0 ? u + 1 : u - 1;  // the neighbour it moves towards
  return height_[u] + d * (height_[v] - height_[u]) / (position_[v] - position_[u]);
}

double StreamingQuantile::Value() const {
  if (count_ == 0) {
    return 0;
  }
  if (count_ <= 5) {
    // Exact: the p-quantile of the values so far, interpolated between order statistics.
    const double rank = p_ * static_cast<double>(count_ - 1);
    const auto low = static_cast<std::size_t>(std::floor(rank));
    const std::size_t high = std::min<std::size_t>(low + 1, static_cast<std::size_t>(count_ - 1));
    const double frac = rank - static_cast<double>(low);
    return height_[low] + frac * (height_[high] - height_[low]);
  }
  return height_[2];
}

}  // namespace gf
