#include "core/background_worker.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

namespace gf {
namespace {

TEST(BackgroundWorkerTest, RunsTasksOnALowerPriorityThreadAndReturnsTheirResults) {
  const int caller_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  const int expected = std::max(BackgroundWorker::kNice, caller_nice);  // never raised
  BackgroundWorker worker;
  const auto caller = std::this_thread::get_id();
  const std::thread::id ran_on =
      worker.Run<std::thread::id>([] { return std::this_thread::get_id(); });
  EXPECT_NE(ran_on, caller);
  // The task sees the worker thread's own nice value, and the caller's is untouched.
  const int task_nice =
      worker.Run<int>([] { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); });
  EXPECT_EQ(task_nice, expected);
  EXPECT_EQ(worker.Nice(), expected);
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), caller_nice);
  const std::string word = "report";
  EXPECT_EQ(worker.Run<std::size_t>([&word] { return word.size(); }), 6u);
}

TEST(BackgroundWorkerTest, CallersFromManyThreadsEachGetTheirOwnResult) {
  BackgroundWorker worker;
  std::vector<int> results(8, -1);
  std::vector<std::thread> callers;
  callers.reserve(8);
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&worker, &results, i] {
      results[static_cast<std::size_t>(i)] = worker.Run<int>([i] { return i * i; });
    });
  }
  for (std::thread& t : callers) {
    t.join();
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(results[static_cast<std::size_t>(i)], i * i);
  }
}

}  // namespace
}  // namespace gf
