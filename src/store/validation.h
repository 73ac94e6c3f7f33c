// Store input checks that the schema alone cannot express (finite numbers, minutes aligned to
// the minute), shared by every backend so that all of them refuse the same input with the same
// message; the conformance suite asserts on these. Rules the schema does enforce (positive job
// ids, an event's job stored) stay with each backend's constraints.
//
// Pure functions; thread-safe. Errors are kInvalidArgument and name the row and the fix.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/gpu_minute.h"
#include "store/store.h"

namespace gf {

// The length of one GpuMinute: rows start at a multiple of it since the epoch.
inline constexpr Millis kGpuMinuteLength{60'000};

// A token's id: 1 to this many of [a-z0-9]. Its secret_hash: this many lowercase hex digits.
inline constexpr std::size_t kMaxTokenIdLength = 32;
inline constexpr std::size_t kTokenHashLength = 64;

// Checks what `batch` holds beyond the schema's constraints: each job's usage (samples >= 0,
// mean_util_pct finite) and each gpu minute (uuid and node not empty, samples >= 0, minute a
// multiple of kGpuMinuteLength, means finite) and each usage record (job > 0, end >= start,
// gpus >= 0, gpu_seconds finite and >= 0) and each token (id [a-z0-9]{1,32}, secret_hash 64
// lowercase hex digits). Backends call it before they write anything, so
// a bad row refuses the whole batch.
Status ValidateBatch(const StoreBatch& batch);

// The arguments of Store::SumUsage: from <= to.
Status ValidateUsageRange(Time from, Time to);

// The arguments of Store::ListGpuMinutes: limit > 0 and from <= to.
Status ValidateGpuMinuteRange(Time from, Time to, int limit);

// The lease rules of Store::AcquireLease, the same for every backend: given the lease row
// (`current`, none before the first), who gets it. The backend writes `lease` when acquired.
LeaseAttempt DecideLease(const std::optional<LeaseHolder>& current,
                         const std::string& holder,
                         Time now,
                         std::chrono::milliseconds ttl);
// Commit's fence (Store::FenceWith): kFailedPrecondition unless `fence` is the epoch of the
// lease row now.
Status CheckFence(std::int64_t fence, const std::optional<LeaseHolder>& current);

}  // namespace gf
