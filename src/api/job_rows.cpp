#include "api/job_rows.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/json_mapping.h"

namespace gf {
namespace {

// Whether `entry` names the object `job` points to: the same control block (owner_before both
// ways false). A control block outlives its object while a weak_ptr names it, so no other
// job's object can match a stale entry.
bool SameObject(const std::weak_ptr<const Job>& entry, const std::shared_ptr<const Job>& job) {
  return !entry.owner_before(job) && !job.owner_before(entry);
}

}  // namespace

void AppendOpenRow(const Job& job, std::string& out) {
  std::string text =
      JobRowToJson(job).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.pop_back();  // the object's '}'
  out += text;
}

void JobRowCache::AppendRow(const std::shared_ptr<const Job>& job, std::string& out) {
  const std::int64_t id = job->id.value();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = rows_.find(id);
    if (it != rows_.end() && SameObject(it->second.job, job)) {
      out += it->second.row;
      return;
    }
  }
  std::string row;
  AppendOpenRow(*job, row);
  out += row;
  std::lock_guard<std::mutex> lock(mu_);
  rows_.insert_or_assign(id, Entry{.job = job, .row = std::move(row)});
  if (rows_.size() >= sweep_at_) {
    Sweep();
  }
}

std::size_t JobRowCache::RowCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_.size();
}

void JobRowCache::Sweep() {
  std::erase_if(rows_, [](const auto& entry) { return entry.second.job.expired(); });
  sweep_at_ = std::max(kMinSweepRows, 2 * rows_.size());
}

}  // namespace gf
