// gf::Error and gf::Result<T>: the error channel of every fallible operation.
//
// Result<T> is the subset of C++23 std::expected that the project uses (g++ 12 ships
// <expected> only with -std=c++2b). It is a value type: no ownership surprises, no
// thread-safety concerns beyond those of T. Errors carry a code from a short closed set and a
// message a person can act on; only api/ maps codes to HTTP statuses.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/check.h"

namespace gf {

enum class ErrorCode {
  kInvalidArgument,     // the caller's input is wrong; the message names the field and the fix
  kNotFound,            // the thing asked for does not exist (or is not visible to the caller)
  kAlreadyExists,       // creating something that exists
  kPermissionDenied,    // the caller may not do this
  kFailedPrecondition,  // valid request, but the system is not in a state to do it
  kResourceExhausted,   // a bound was hit (size limits, queue full)
  kUnavailable,         // a dependency is missing or down (no driver, socket refused)
  kIo,                  // the operating system said no (file, socket, process)
  kInternal,            // a bug or an unexpected library failure
};

std::string_view ToString(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // "invalid argument: needs 4 GPUs ..." — for logs and CLI output.
  std::string ToString() const;
};

inline Error MakeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}
inline Error InvalidArgument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Error NotFound(std::string m) {
  return {ErrorCode::kNotFound, std::move(m)};
}
inline Error PermissionDenied(std::string m) {
  return {ErrorCode::kPermissionDenied, std::move(m)};
}
inline Error FailedPrecondition(std::string m) {
  return {ErrorCode::kFailedPrecondition, std::move(m)};
}
inline Error Unavailable(std::string m) {
  return {ErrorCode::kUnavailable, std::move(m)};
}
inline Error IoError(std::string m) {
  return {ErrorCode::kIo, std::move(m)};
}
inline Error Internal(std::string m) {
  return {ErrorCode::kInternal, std::move(m)};
}

// The text of an errno value ("No such file or directory"), for messages. Thread-safe, unlike
// strerror.
std::string ErrnoText(int err);

// Result<T>: either a T or an Error. Implicitly constructible from both, so a function
// returns `value` or `InvalidArgument("...")` directly.
template <typename T>
class [[nodiscard]] Result {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor)
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  // NOLINTNEXTLINE(google-explicit-constructor)
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  // NOLINTNEXTLINE(readability-identifier-naming): std::expected name
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {  // NOLINT(readability-identifier-naming): std::expected name
    GF_CHECK(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {  // NOLINT(readability-identifier-naming): std::expected name
    GF_CHECK(ok());
    return std::get<0>(v_);
  }
  T&& value() && {  // NOLINT(readability-identifier-naming): std::expected name
    GF_CHECK(ok());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {  // NOLINT(readability-identifier-naming): std::expected name
    GF_CHECK(!ok());
    return std::get<1>(v_);
  }
  // NOLINTNEXTLINE(readability-identifier-naming): std::expected name
  T value_or(T other) const& { return ok() ? std::get<0>(v_) : std::move(other); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  // NOLINTNEXTLINE(google-explicit-constructor)
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }  // NOLINT(readability-identifier-naming): std::expected name
  explicit operator bool() const { return ok_; }
  const Error& error() const {  // NOLINT(readability-identifier-naming): std::expected name
    GF_CHECK(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;
inline Status OkStatus() {
  return {};
}

}  // namespace gf

// Internal helpers of the macros below; not for use elsewhere.
#define GF_INTERNAL_CONCAT_INNER(a, b) a##b
#define GF_INTERNAL_CONCAT(a, b) GF_INTERNAL_CONCAT_INNER(a, b)

// GF_TRY(expr): evaluates a Result-returning expression; returns its error from the
// enclosing function if it failed.
#define GF_TRY(expr)                 \
  do {                               \
    auto gf_try_result_ = (expr);    \
    if (!gf_try_result_.ok()) {      \
      return gf_try_result_.error(); \
    }                                \
  } while (false)

// GF_ASSIGN_OR_RETURN(lhs, expr): `lhs = value of expr`, or return its error.
#define GF_ASSIGN_OR_RETURN(lhs, expr) \
  GF_INTERNAL_ASSIGN_OR_RETURN(GF_INTERNAL_CONCAT(gf_result_, __LINE__), lhs, expr)
// `tmp` is an identifier and `lhs` may be a declaration (`auto x`): neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GF_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) {                                   \
    return tmp.error();                              \
  }                                                  \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
