// ClusterReader::JobHistory: `gpufleet history` (issue #24) read from the store, page by page;
// ClusterReader::GpuHistory: a GPU's per-minute rollups, its series past the in-memory rings.
#include <string>
#include <utility>

#include "controller/authorization.h"
#include "controller/read_side.h"

namespace gf {

Result<HistoryPage> ClusterReader::JobHistory(const Caller& caller,
                                              const HistoryFilter& filter) const {
  if (filter.limit < 1 || filter.limit > kMaxHistoryPage) {
    return InvalidArgument("limit: must be from 1 to " + std::to_string(kMaxHistoryPage) +
                           ", got " + std::to_string(filter.limit));
  }
  if (filter.since && filter.until && *filter.until < *filter.since) {
    return InvalidArgument("until: before since; give an --until after --since");
  }
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  GF_TRY(AuthorizeList(caller, filter.user));
  JobHistoryQuery query{.user = filter.user,
                        .team = filter.team,
                        .states = filter.states,
                        .since = filter.since,
                        .until = filter.until,
                        .before = filter.before,
                        .limit = filter.limit + 1};  // one more: whether a next page exists
  if (!Allows(caller, Resource::kJob, Action::kRead, Ownership::kOther)) {
    query.uid = caller.uid;  // a user's own jobs, in the store's query: pages stay full
  }
  GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
  // Read after the view was taken: a stored copy is as new as the view's or newer.
  GF_ASSIGN_OR_RETURN(std::vector<Job> stored, reader->ListJobHistory(query));
  HistoryPage page;
  if (static_cast<int>(stored.size()) > filter.limit) {
    stored.resize(static_cast<std::size_t>(filter.limit));
    page.next = stored.back().id;
  }
  page.jobs.reserve(stored.size());
  for (Job& job : stored) {
    if (Visible(caller, job)) {
      page.jobs.push_back(AsRead(*view, std::move(job)));
    }
  }
  return page;
}

Result<std::vector<GpuMinute>> ClusterReader::GpuHistory(const Caller& caller,
                                                         const GpuUuid& uuid,
                                                         Time from,
                                                         Time to) const {
  (void)caller;  // as public as ListGpus
  if (to < from) {
    return InvalidArgument("to_ms: before from_ms; give a range that ends after it starts");
  }
  // The newest kMaxGpuHistoryMinutes: a chart of a long window shows its latest month.
  from = std::max(from, to - std::chrono::minutes(kMaxGpuHistoryMinutes));
  GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
  return reader->ListGpuMinutesOf(uuid, from, to, kMaxGpuHistoryMinutes);
}

}  // namespace gf
