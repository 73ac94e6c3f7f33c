// GF_CHECK(cond): states an invariant of the program. A failure is a bug: it prints
// file:line and the condition, then aborts. Never use it on user or network input.
#pragma once

namespace gf::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition);
}  // namespace gf::internal

#define GF_CHECK(cond)                                        \
  do {                                                        \
    if (!(cond)) {                                            \
      ::gf::internal::CheckFailed(__FILE__, __LINE__, #cond); \
    }                                                         \
  } while (false)
