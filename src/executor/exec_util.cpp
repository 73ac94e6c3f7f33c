#include "executor/exec_util.h"

#include <algorithm>

#include <signal.h>
#include <unistd.h>

namespace gf::exec {

void ResetSignalsForExec() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) {
      ::sigaction(sig, &dfl, nullptr);
    }
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
}

void CloseFdsFrom3Except(int keep_a, int keep_b) {
  const int low = std::min(keep_a, keep_b);
  const int high = std::max(keep_a, keep_b);
  unsigned from = 3;
  for (int keep : {low, high}) {
    if (keep >= static_cast<int>(from)) {
      if (keep > static_cast<int>(from)) {
        ::close_range(from, static_cast<unsigned>(keep - 1), 0);
      }
      from = static_cast<unsigned>(keep) + 1;
    }
  }
  ::close_range(from, ~0U, 0);
}

}  // namespace gf::exec
