#include "controller/view.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace gf {
namespace {

std::int64_t PageOf(JobId id) {
  return id.value() / kViewPageJobs;
}

// The page of `from`..`to` (one page's active jobs, ascending ids, terminal ones included): the
// last view's page when nothing in it changed, else a new one that shares the unchanged jobs.
std::shared_ptr<const ControllerView::Page> NextPage(
    const std::shared_ptr<const ControllerView::Page>* last,
    std::map<JobId, Job>::const_iterator from,
    std::map<JobId, Job>::const_iterator to) {
  ControllerView::Page page;
  bool changed = last == nullptr;
  std::size_t at = 0;  // in *last, walked along with the ids (both ascending)
  for (auto it = from; it != to; ++it) {
    const Job& job = it->second;
    if (IsTerminal(job.state)) {
      changed = true;  // it ended this turn, which has committed: readers find it in the store
      continue;
    }
    std::shared_ptr<const Job> kept;
    if (last != nullptr) {
      const ControllerView::Page& old = **last;
      while (at < old.size() && old[at]->id < job.id) {
        ++at;
        changed = true;  // that one left
      }
      if (at < old.size() && old[at]->id == job.id) {
        if (SameLiveFields(*old[at], job)) {
          kept = old[at];
        }
        ++at;
      }
    }
    if (kept == nullptr) {
      kept = std::make_shared<const Job>(job);
      changed = true;
    }
    page.push_back(std::move(kept));
  }
  if (last != nullptr && at < (*last)->size()) {
    changed = true;
  }
  if (!changed) {
    return *last;
  }
  if (page.empty()) {
    return nullptr;
  }
  return std::make_shared<const ControllerView::Page>(std::move(page));
}

}  // namespace

const Job* ControllerView::Find(JobId id) const {
  const std::shared_ptr<const Job>* job = FindShared(id);
  return job != nullptr ? job->get() : nullptr;
}

const std::shared_ptr<const Job>* ControllerView::FindShared(JobId id) const {
  auto page = pages.find(PageOf(id));
  if (page == pages.end()) {
    return nullptr;
  }
  const Page& jobs = *page->second;
  auto it = std::lower_bound(
      jobs.begin(), jobs.end(), id, [](const auto& job, JobId want) { return job->id < want; });
  return it != jobs.end() && (*it)->id == id ? &*it : nullptr;
}

std::string CountedTeam(const Job& job) {
  return job.spec.team.empty() ? "default" : job.spec.team;
}

double HeldGpuSeconds(const Job& job, Time now) {
  if (!job.allocation || !job.start_time) {
    return 0;
  }
  const Time end = job.end_time.value_or(now);
  return end > *job.start_time ? std::chrono::duration<double>(end - *job.start_time).count() *
                                     HeldGpus(*job.allocation)
                               : 0;
}

bool SameLiveFields(const Job& a, const Job& b) {
  return a.id == b.id && a.state == b.state && a.reason == b.reason &&
         a.pending_reason == b.pending_reason && a.estimated_start == b.estimated_start &&
         a.start_estimate == b.start_estimate && a.allocation == b.allocation &&
         a.start_time == b.start_time && a.end_time == b.end_time && a.exit_code == b.exit_code &&
         a.pid == b.pid && a.usage == b.usage && a.preemptible == b.preemptible &&
         a.budget_approved == b.budget_approved && a.last_checkpoint == b.last_checkpoint &&
         a.submit_time == b.submit_time && a.owner.user == b.owner.user && a.spec.env == b.spec.env;
}

std::shared_ptr<const ControllerView> NextView(
    const ControllerView& last,
    const std::map<JobId, Job>& active,
    const std::vector<const Node*>& nodes,
    const ControllerCounters& counters,
    const std::optional<Error>& fatal,
    std::shared_ptr<const std::vector<JobId>> queue_order) {
  auto next = std::make_shared<ControllerView>();
  for (auto from = active.begin(); from != active.end();) {
    const std::int64_t key = PageOf(from->first);
    auto to = from;
    while (to != active.end() && PageOf(to->first) == key) {
      ++to;
    }
    auto old = last.pages.find(key);
    std::shared_ptr<const ControllerView::Page> page =
        NextPage(old == last.pages.end() ? nullptr : &old->second, from, to);
    if (page != nullptr) {
      next->pages.emplace_hint(next->pages.end(), key, std::move(page));
    }
    from = to;
  }
  next->nodes.reserve(nodes.size());
  std::size_t at = 0;  // in last.nodes, walked along with the names (both ascending)
  for (const Node* node : nodes) {
    while (at < last.nodes.size() && last.nodes[at]->name < node->name) {
      ++at;
    }
    if (at < last.nodes.size() && last.nodes[at]->name == node->name && *last.nodes[at] == *node) {
      next->nodes.push_back(last.nodes[at]);
    } else {
      next->nodes.push_back(std::make_shared<const Node>(*node));
    }
  }
  next->counters = counters;
  next->queue_order = std::move(queue_order);
  next->fatal = fatal;
  return next;
}

Result<ReadConnections::Lease> ReadConnections::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<StoreReader> reader = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(reader));
    }
  }
  GF_ASSIGN_OR_RETURN(std::unique_ptr<StoreReader> reader, open_());  // outside the lock
  return Lease(this, std::move(reader));
}

void ReadConnections::Return(std::unique_ptr<StoreReader> reader) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(reader));
}

void ControllerCounters::CountWait(double wait_seconds) {
  const auto* bucket =
      std::lower_bound(kWaitBucketBounds.begin(), kWaitBucketBounds.end(), wait_seconds);
  if (bucket != kWaitBucketBounds.end()) {
    wait_buckets[static_cast<std::size_t>(bucket - kWaitBucketBounds.begin())] += 1;
  }
  wait_count += 1;
  wait_sum_seconds += std::max(0.0, wait_seconds);
}

}  // namespace gf
