// PrivatePostgres: a throwaway PostgreSQL server for a bench, started and stopped with the
// tests' fixture script (tests/postgres/pg_fixture.sh: Debian's server binaries, a cluster in a
// temp dir, loopback only, trust authentication, fsync on as in production).
//
// Ownership: owns the server and its temp dir; the destructor stops the one and removes the
// other. Thread-safety: none needed (url() is read-only once Start has returned).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/result.h"

namespace gf::bench {

class PrivatePostgres {
 public:
  // `fixture` is the path of pg_fixture.sh. Errors: kIo (temp dir), kUnavailable (the script
  // failed: PostgreSQL not installed, or the server did not start; its output is on stderr).
  static Result<std::unique_ptr<PrivatePostgres>> Start(const std::string& fixture);
  ~PrivatePostgres();
  PrivatePostgres(const PrivatePostgres&) = delete;
  PrivatePostgres& operator=(const PrivatePostgres&) = delete;

  // "postgresql://gf@127.0.0.1:PORT/postgres"
  const std::string& url() const { return url_; }

 private:
  PrivatePostgres(std::string fixture, std::filesystem::path dir)
      : fixture_(std::move(fixture)), dir_(std::move(dir)) {}

  std::string fixture_;
  std::filesystem::path dir_;
  std::string url_;
};

}  // namespace gf::bench
