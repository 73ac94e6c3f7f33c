#include "private_postgres.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <system_error>

#include <sys/stat.h>

namespace gf::bench {
namespace fs = std::filesystem;

namespace {

// Runs `fixture VERB DIR`; the script prints its own errors to stderr.
bool RunFixture(const std::string& fixture, const char* verb, const fs::path& dir) {
  const std::string cmd = fixture + " " + verb + " '" + dir.string() + "'";
  // Our own script and a quoted path; the benches start and stop PostgreSQL from their main
  // thread, before or after their workers.
  return std::system(cmd.c_str()) == 0;  // NOLINT(cert-env33-c,concurrency-mt-unsafe)
}

}  // namespace

Result<std::unique_ptr<PrivatePostgres>> PrivatePostgres::Start(const std::string& fixture) {
  std::string pattern = (fs::temp_directory_path() / "gf-bench-pg.XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return IoError("cannot create a temp dir for PostgreSQL: " +
                   std::generic_category().message(errno));
  }
  // As root the server runs as `postgres` (pg_fixture.sh), which must reach the folder.
  chmod(pattern.c_str(), 0755);
  std::unique_ptr<PrivatePostgres> pg(new PrivatePostgres(fixture, pattern));
  if (!RunFixture(fixture, "start", pg->dir_ / "pg")) {
    return Unavailable("could not start a private PostgreSQL with " + fixture +
                       " (is the 'postgresql' package installed? scripts/bootstrap.sh)");
  }
  if (!(std::ifstream(pg->dir_ / "pg" / "url") >> pg->url_) || pg->url_.empty()) {
    return Unavailable(fixture + " started PostgreSQL but wrote no URL to " +
                       (pg->dir_ / "pg" / "url").string());
  }
  return pg;
}

PrivatePostgres::~PrivatePostgres() {
  if (!RunFixture(fixture_, "stop", dir_ / "pg")) {
    std::cerr << "bench: could not stop the private PostgreSQL in " << dir_.string() << "\n";
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace gf::bench
