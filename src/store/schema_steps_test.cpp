#include "store/schema_steps.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

// The statements without their `--` comments (which may name the other dialect's words).
std::string WithoutComments(std::string_view sql) {
  std::string out;
  while (!sql.empty()) {
    const std::size_t dash = sql.find("--");
    out += sql.substr(0, dash);
    if (dash == std::string_view::npos) {
      break;
    }
    const std::size_t eol = sql.find('\n', dash);
    sql.remove_prefix(eol == std::string_view::npos ? sql.size() : eol);
  }
  return out;
}

TEST(SchemaStepsTest, BothDialectsHaveTheSameVersionsAndDescriptions) {
  const auto sqlite = SchemaSteps(SqlDialect::kSqlite);
  const auto postgres = SchemaSteps(SqlDialect::kPostgres);
  ASSERT_EQ(sqlite.size(), postgres.size());
  for (std::size_t i = 0; i < sqlite.size(); ++i) {
    EXPECT_EQ(sqlite[i].version, static_cast<int>(i) + 1);
    EXPECT_EQ(postgres[i].version, sqlite[i].version);
    EXPECT_EQ(postgres[i].description, sqlite[i].description);
  }
}

// Each dialect gets its own words and none of the other's.
TEST(SchemaStepsTest, EachDialectGetsItsOwnTypesAndLiterals) {
  for (const Migration& m : SchemaSteps(SqlDialect::kSqlite)) {
    const std::string sql = WithoutComments(m.sql);
    EXPECT_EQ(sql.find("BYTEA"), std::string::npos) << m.version;
    EXPECT_EQ(sql.find("BIGINT"), std::string::npos) << m.version;
    EXPECT_EQ(sql.find("store_counters"), std::string::npos) << m.version;
  }
  for (const Migration& m : SchemaSteps(SqlDialect::kPostgres)) {
    const std::string sql = WithoutComments(m.sql);
    EXPECT_EQ(sql.find("AUTOINCREMENT"), std::string::npos) << m.version;
    EXPECT_EQ(sql.find("WITHOUT ROWID"), std::string::npos) << m.version;
    // Strings are BYTEA; the one TEXT is the name of a counter, PostgreSQL's own table.
    std::size_t texts = 0;
    for (std::size_t at = sql.find(" TEXT "); at != std::string::npos;
         at = sql.find(" TEXT ", at + 1)) {
      ++texts;
    }
    EXPECT_EQ(texts, m.version == 1 ? 1U : 0U) << m.version;
  }
  const std::string first(SchemaSteps(SqlDialect::kPostgres)[0].sql);
  EXPECT_NE(first.find("CREATE TABLE store_counters"), std::string::npos);
  EXPECT_NE(first.find("id            BIGINT PRIMARY KEY CHECK (id > 0)"), std::string::npos);
  const std::string first_sqlite(SchemaSteps(SqlDialect::kSqlite)[0].sql);
  EXPECT_NE(first_sqlite.find("id            INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id > 0)"),
            std::string::npos);
}

TEST(SchemaStepsTest, RendersEveryPlaceholder) {
  const std::string neutral =
      "a {INT}, b {FLAG}, c {TEXT} DEFAULT {EMPTY}, d {TEXT} DEFAULT {EMPTY_OBJECT}, "
      "e {TEXT} DEFAULT {EMPTY_ARRAY}, f {REAL}, g {SEQ}) {WITHOUT_ROWID}";
  EXPECT_EQ(RenderSchemaSql(neutral, SqlDialect::kSqlite),
            "a INTEGER, b INTEGER, c TEXT DEFAULT '', d TEXT DEFAULT '{}', e TEXT DEFAULT '[]', "
            "f REAL, g INTEGER PRIMARY KEY AUTOINCREMENT) WITHOUT ROWID");
  EXPECT_EQ(RenderSchemaSql(neutral, SqlDialect::kPostgres),
            "a BIGINT, b SMALLINT, c BYTEA DEFAULT ''::bytea, d BYTEA DEFAULT '{}'::bytea, "
            "e BYTEA DEFAULT '[]'::bytea, f DOUBLE PRECISION, g BIGINT PRIMARY KEY) ");
}

TEST(SchemaStepsDeathTest, AMisspeltPlaceholderIsCaught) {
  EXPECT_DEATH((void)RenderSchemaSql("a {INTEGR}", SqlDialect::kSqlite), "");
}

}  // namespace
}  // namespace gf
