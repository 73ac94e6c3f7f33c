// BackgroundWorker: runs tasks one at a time on a thread of its own at background CPU priority
// (nice 10). Long work that a caller waits for — a month's report reads and sums a month of
// per-minute history — then yields the CPU to the work people are waiting on interactively (a
// queue listing, a submission, the controller's turn) instead of taking a core from it: the
// kernel's fair scheduler gives a nice-10 thread about a tenth of a contended core and the whole
// core when nothing else wants it. Lowering a thread's own priority needs no privilege. Tasks
// run in arrival order; Run blocks its caller until the task is done, so a task may refer to
// the caller's locals.
//
// Thread-safe. The destructor runs the tasks already queued, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace gf {

class BackgroundWorker {
 public:
  // The nice value of the worker's thread (0 is the default, 19 the lowest priority).
  static constexpr int kNice = 10;

  BackgroundWorker();
  ~BackgroundWorker();
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  // Runs `task` on the worker's thread and returns its result.
  template <typename T>
  T Run(const std::function<T()>& task) {
    std::packaged_task<T()> packaged(task);
    std::future<T> result = packaged.get_future();
    Post([&packaged] { packaged(); });
    return result.get();
  }

  // The nice value the worker's thread runs at: kNice, or the process's own if that is lower
  // priority already, or what it inherited if the kernel refused.
  int Nice() const;

 private:
  void Post(std::function<void()> task);
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  int nice_ = 0;                             // GUARDED_BY(mu_)
  std::thread thread_;                       // last: started once the rest exists
};

}  // namespace gf
