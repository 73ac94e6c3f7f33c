#include "cli/table.h"

#include <sstream>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(TableTest, AlignsColumns) {
  Table t({"ID", "STATE", "REASON"});
  t.AddRow({"1", "RUNNING", ""});
  t.AddRow({"12", "PENDING", "needs 4 GPUs"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(),
            "ID  STATE    REASON\n"
            "1   RUNNING\n"
            "12  PENDING  needs 4 GPUs\n");
}

TEST(TableTest, AlignsByCharactersNotBytes) {
  Table t({"MODE", "USER"});
  t.AddRow({"mps→exclusive", "jürgen"});
  t.AddRow({"shared", "ana"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(),
            "MODE           USER\n"
            "mps→exclusive  jürgen\n"
            "shared         ana\n");
}

// A job name or reason is another user's text: an ESC in it must not reach the terminal of
// root running `queue`, and a newline must not forge a row (issue #20).
TEST(TableTest, EscapesControlCharactersInCells) {
  Table t({"ID", "NAME", "REASON"});
  t.AddRow({"7", "x\x1b]0;owned\x07", "waits\n8  RUNNING  fake"});
  t.AddRow({"8", "eval", "-"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos);
  EXPECT_EQ(out.str(),
            "ID  NAME               REASON\n"
            "7   x\\x1b]0;owned\\x07  waits\\x0a8  RUNNING  fake\n"
            "8   eval               -\n");
}

}  // namespace
}  // namespace gf
