// Strong id types: a JobId cannot be passed where a NodeId is expected.
// Plain values; thread-safety is that of the underlying representation.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace gf {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using rep_type = Rep;
  StrongId() = default;
  explicit StrongId(Rep value) : value_(std::move(value)) {}

  // NOLINTNEXTLINE(readability-identifier-naming): as Result::value()
  const Rep& value() const { return value_; }
  // llvm#53961: the 0 that a defaulted <=> compares against is not ours to spell nullptr.
  auto operator<=>(const StrongId&) const = default;  // NOLINT(modernize-use-nullptr)

 private:
  Rep value_{};
};

struct JobIdTag {};
struct NodeIdTag {};
struct GpuUuidTag {};

// Job ids are positive and increase in submit order; 0 never names a job.
using JobId = StrongId<JobIdTag, std::int64_t>;
// A node's name (its hostname by default).
using NodeId = StrongId<NodeIdTag, std::string>;
// A GPU's UUID as NVML reports it ("GPU-8c1f…"); stable across reboots and renumbering.
using GpuUuid = StrongId<GpuUuidTag, std::string>;

}  // namespace gf

template <typename Tag, typename Rep>
struct std::hash<gf::StrongId<Tag, Rep>> {
  std::size_t operator()(const gf::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
