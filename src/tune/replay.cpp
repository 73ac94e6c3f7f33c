#include "tune/replay.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "core/check.h"
#include "sim/engine.h"
#include "sim/metrics.h"

namespace gf::tune {

Result<std::vector<Measured>> ReplayCandidates(const ReplayInput& input,
                                               const std::vector<Candidate>& candidates,
                                               const std::vector<Goal>& goals,
                                               int threads,
                                               const ReplayProgress& progress) {
  GF_CHECK(threads >= 1);
  // One slot per candidate, written by the one thread that replays it: no two threads touch
  // the same slot, and the caller reads them only after every thread has joined.
  std::vector<std::optional<Result<Measured>>> slots(candidates.size());
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t done = 0;  // guarded by progress_mutex
  const auto work = [&] {
    // The next candidate nobody took: a long replay does not hold up the short ones behind it.
    for (std::size_t i = next.fetch_add(1); i < candidates.size(); i = next.fetch_add(1)) {
      try {
        const sim::SimOptions options{.policy = candidates[i].policy,
                                      .team_of_user = input.team_of_user};
        Result<sim::SimResult> result = sim::Simulate(input.nodes, input.jobs, options);
        slots[i] = result.ok() ? Result<Measured>(Measure(goals, sim::Summarize(*result)))
                               : Result<Measured>(result.error());
      } catch (const std::exception& e) {  // a thread's entry: out of memory ends this replay
        slots[i] = Result<Measured>(Internal(e.what()));
      }
      const std::lock_guard lock(progress_mutex);
      ++done;
      if (progress) {
        progress(done, candidates[i].name);
      }
    }
  };
  const std::size_t count =
      std::min(static_cast<std::size_t>(threads), std::max<std::size_t>(candidates.size(), 1));
  std::vector<std::thread> pool;
  pool.reserve(count - 1);
  for (std::size_t t = 1; t < count; ++t) {
    pool.emplace_back(work);
  }
  work();  // the calling thread replays too
  for (std::thread& thread : pool) {
    thread.join();
  }
  std::vector<Measured> measured;
  measured.reserve(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!slots[i]->ok()) {
      return Error{
          slots[i]->error().code,
          "replaying candidate '" + candidates[i].name + "': " + slots[i]->error().message};
    }
    measured.push_back(std::move(**slots[i]));
  }
  return measured;
}

}  // namespace gf::tune
