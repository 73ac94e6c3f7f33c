// The one ErrorCode <-> HTTP status table (STYLE.md: only api/ maps codes to statuses),
// declared in routes.h. In a file of its own, apart from the routes, because the client reads it
// too (ErrorFromResponse): the client executable links this, not the server's route table.
#include <array>
#include <span>

#include "api/routes.h"

namespace gf {
namespace {

struct StatusEntry {
  ErrorCode code;
  int status;
};
constexpr std::array<StatusEntry, 9> kStatusTable = {{
    {ErrorCode::kInvalidArgument, 400},
    {ErrorCode::kNotFound, 404},
    {ErrorCode::kAlreadyExists, 409},
    {ErrorCode::kPermissionDenied, 403},
    {ErrorCode::kFailedPrecondition, 409},
    {ErrorCode::kResourceExhausted, 429},
    {ErrorCode::kUnavailable, 503},
    {ErrorCode::kIo, 500},
    {ErrorCode::kInternal, 500},
}};
// Statuses the transport produces without an ErrorCode, read back by clients.
constexpr std::array<StatusEntry, 5> kTransportStatuses = {{
    {ErrorCode::kPermissionDenied, 401},   // unauthenticated
    {ErrorCode::kInvalidArgument, 405},    // method not allowed
    {ErrorCode::kInvalidArgument, 415},    // body not labelled application/json
    {ErrorCode::kResourceExhausted, 413},  // body too large
    {ErrorCode::kInvalidArgument, 431},    // headers too large
}};

}  // namespace

int HttpStatusFor(ErrorCode code) {
  for (const auto& entry : kStatusTable) {
    if (entry.code == code) {
      return entry.status;
    }
  }
  return 500;
}

ErrorCode ErrorCodeForHttpStatus(int status) {
  for (const auto& table : {std::span<const StatusEntry>(kStatusTable),
                            std::span<const StatusEntry>(kTransportStatuses)}) {
    for (const auto& entry : table) {
      if (entry.status == status) {
        return entry.code;
      }
    }
  }
  return status >= 500 ? ErrorCode::kInternal : ErrorCode::kInvalidArgument;
}

}  // namespace gf
