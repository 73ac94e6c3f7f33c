#include "core/result.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gf {

std::string_view ToString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kPermissionDenied:
      return "permission denied";
    case ErrorCode::kFailedPrecondition:
      return "failed precondition";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}

std::string ErrnoText(int err) {
  const char* text = ::strerrordesc_np(err);  // GNU; unlike strerror, returns static text
  return text != nullptr ? text : "error " + std::to_string(err);
}

std::string Error::ToString() const {
  std::string out(gf::ToString(code));
  out += ": ";
  out += message;
  return out;
}

namespace internal {
void CheckFailed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "%s:%d: GF_CHECK failed: %s\n", file, line, condition);
  std::abort();
}
}  // namespace internal

}  // namespace gf
