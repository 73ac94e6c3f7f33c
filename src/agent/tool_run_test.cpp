#include "agent/tool_run.h"

#include <array>
#include <csignal>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace gf {
namespace {

// A test binary keeps SIGPIPE's default action (end the process), as any caller may: a write to
// a pipe whose reader is gone (a program that failed at once) must only fail, never end it.
TEST(ToolRunTest, AWriteToACommandThatIsGoneFailsWithoutEndingTheCaller) {
  ASSERT_EQ(std::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  std::array<int, 2> fds{};
  ASSERT_EQ(::pipe(fds.data()), 0);
  ::close(fds[0]);  // nobody reads
  EXPECT_FALSE(WriteIgnoringHangUp(fds[1], "quit\n"));
  ::close(fds[1]);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);  // none left to strike later
}

TEST(ToolRunTest, InputReachesTheCommand) {
  const ToolOutcome outcome =
      RunTool(ToolRun{.command = "cat", .env = {}, .input = "quit\n", .timeout = Millis(10000)});
  EXPECT_TRUE(outcome.passed) << outcome.detail;
  EXPECT_EQ(outcome.output, "quit\n");
}

}  // namespace
}  // namespace gf
