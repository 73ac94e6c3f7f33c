#include "core/background_worker.h"

#include <cerrno>
#include <utility>

#include <sys/resource.h>
#include <unistd.h>

namespace gf {

BackgroundWorker::BackgroundWorker() : thread_([this] { Loop(); }) {}

BackgroundWorker::~BackgroundWorker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

int BackgroundWorker::Nice() const {
  std::lock_guard lock(mu_);
  return nice_;
}

void BackgroundWorker::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void BackgroundWorker::Loop() {
  // On Linux a thread's nice value is its own (PRIO_PROCESS with a thread id). A refusal
  // (a seccomp filter, say) leaves it at its default priority: slower reads elsewhere, not wrong.
  // A process started at a lower priority still (`nice -n 15`) keeps it: never raised here.
  const auto tid = static_cast<id_t>(gettid());
  errno = 0;
  const int inherited = getpriority(PRIO_PROCESS, tid);
  const int wanted = errno == 0 && inherited > kNice ? inherited : kNice;
  const int nice = setpriority(PRIO_PROCESS, tid, wanted) == 0 ? wanted : inherited;
  std::unique_lock lock(mu_);
  nice_ = nice;
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) {
      return;  // stopping, and nothing left to run
    }
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace gf
