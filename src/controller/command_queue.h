// CommandQueue: the inbox of the controller's state thread.
//
// Many producers (API worker threads, agent threads) push commands; the one consumer (the
// state thread) takes everything queued in one go, so a burst of submissions is applied in one
// loop turn and shares one durable commit (group commit); it may gather more before it commits
// (commit_window.h). Thread-safe.
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
  std::chrono::steady_clock::time_point queued{};   // set by Push
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
      command.queued = std::chrono::steady_clock::now();
      commands_.push_back(std::move(command));
    }
    cv_.notify_one();
    return true;
  }

  // Waits until a command arrives, the queue closes, or `deadline` passes; returns all queued.
  std::vector<Command> WaitAndDrain(std::chrono::steady_clock::time_point deadline) {
    std::vector<Command> out;
    WaitAndDrainInto(out, deadline);
    return out;
  }

  // Waits until a command arrives, the queue closes, or `deadline` passes; appends all queued
  // to `into` and says whether there were any (the state thread gathering a turn's commands).
  bool WaitAndDrainInto(std::vector<Command>& into,
                        std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [this] { return closed_ || !commands_.empty(); });
    const bool any = !commands_.empty();
    into.insert(into.end(),
                std::make_move_iterator(commands_.begin()),
                std::make_move_iterator(commands_.end()));
    commands_.clear();
    return any;
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
