// Clock: the only way code reads the time, so that tests and the simulator can drive it.
//
// Time is wall-clock time at millisecond resolution (it is persisted and shown to people).
// SystemClock is thread-safe; ManualClock is thread-safe too (an atomic), so a test can
// advance it while the controller thread reads it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gf {

using Millis = std::chrono::milliseconds;
using Time = std::chrono::time_point<std::chrono::system_clock, Millis>;

inline std::int64_t ToUnixMillis(Time t) {
  return t.time_since_epoch().count();
}
inline Time FromUnixMillis(std::int64_t ms) {
  return Time(Millis(ms));
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Time Now() const override {
    return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  }
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start = FromUnixMillis(1'700'000'000'000))
      : now_ms_(ToUnixMillis(start)) {}
  Time Now() const override { return FromUnixMillis(now_ms_.load()); }
  void Advance(Millis d) { now_ms_ += d.count(); }
  void Set(Time t) { now_ms_ = ToUnixMillis(t); }

 private:
  std::atomic<std::int64_t> now_ms_;
};

}  // namespace gf
