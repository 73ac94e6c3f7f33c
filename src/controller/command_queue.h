// CommandQueue: the inbox of the controller's state thread.
//
// Many producers (API worker threads, agent threads) push commands; the one consumer (the
// state thread) takes everything queued in one go, so a burst of submissions is applied in one
// loop turn and shares one durable commit (group commit). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "core/result.h"

namespace gf {

struct Command {
  std::function<void()> apply;                      // runs on the state thread
  std::function<void(const Status& commit)> reply;  // after the turn's commit; may be empty
};

class CommandQueue {
 public:
  // False when the queue is closed (the controller stopped): the command was not queued.
  bool Push(Command command) {
    {
      std::lock_guard lock(mu_);
      if (closed_) {
        return false;
      }
      commands_.push_back(std::move(command));
    }
    cv_.notify_one();
    return true;
  }

  // Waits until a command arrives, the queue closes, or `deadline` passes; returns all queued.
  std::vector<Command> WaitAndDrain(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [this] { return closed_ || !commands_.empty(); });
    std::vector<Command> out(std::make_move_iterator(commands_.begin()),
                             std::make_move_iterator(commands_.end()));
    commands_.clear();
    return out;
  }

  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  bool closed() const {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return closed_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> commands_;  // GUARDED_BY(mu_)
  bool closed_ = false;           // GUARDED_BY(mu_)
};

}  // namespace gf
