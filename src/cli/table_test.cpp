#include "cli/table.h"

#include <gtest/gtest.h>

#include <sstream>

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

}  // namespace
}  // namespace gf
