// gf_store_bench: durable Commits per second of the submit path (one job and its "submit"
// event per Commit, as the controller writes an accepted job before it answers) on each Store
// backend: SQLite (WAL, synchronous=FULL, a file in /tmp) and PostgreSQL (synchronous_commit=on,
// a fresh schema, dropped at the end). Also 16 jobs + 16 events per Commit: what group commit
// buys when many clients submit at once.
//
// PostgreSQL: GF_BENCH_POSTGRES_URL names a server; without it the bench starts a private one
// with tests/postgres/pg_fixture.sh (fsync on: the default, durable) and stops it at the end.
// Google Benchmark; how to run it and the figures measured: bench/README.md.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <pqxx/pqxx>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

#include "private_postgres.h"

namespace gf {
namespace {

// A pending job as `gpufleet submit --gpus 1 -- python train.py` makes it.
Job SubmittedJob(std::int64_t id) {
  Job job;
  job.id = JobId(id);
  job.owner = Owner{1000, 1000, "ana"};
  job.spec.name = "train";
  job.spec.argv = {"python", "train.py", "--epochs", "10"};
  job.spec.workdir = "/home/ana/project";
  job.spec.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/ana"}};
  job.spec.request.gpus = 1;
  job.spec.team = "vision";
  job.submit_time = FromUnixMillis(1'700'000'000'000 + id);
  job.reason = "Priority";
  return job;
}

Event SubmitEvent(std::int64_t id) {
  return Event{.seq = 0,
               .time = FromUnixMillis(1'700'000'000'000 + id),
               .job = JobId(id),
               .kind = "submit",
               .actor = "ana",
               .message = "submitted, 1 GPU"};
}

// range(0): jobs per Commit.
void CommitSubmits(benchmark::State& state, Store& store, std::int64_t& next_id) {
  const auto per_commit = static_cast<std::int64_t>(state.range(0));
  for (auto _ : state) {
    StoreBatch batch;
    for (std::int64_t i = 0; i < per_commit; ++i) {
      batch.jobs.push_back(SubmittedJob(next_id));
      batch.events.push_back(SubmitEvent(next_id));
      ++next_id;
    }
    if (Status s = store.Commit(batch); !s.ok()) {
      state.SkipWithError(s.error().ToString().c_str());
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * per_commit);
  state.counters["commits/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

constexpr std::string_view kBenchSchema = "gf_store_bench";

void DropBenchSchema(const std::string& url) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction txn(conn);
    txn.exec("DROP SCHEMA IF EXISTS " + std::string(kBenchSchema) + " CASCADE");
  } catch (const std::exception& e) {
    std::cerr << "gf_store_bench: drop schema: " << e.what() << "\n";
  }
}

}  // namespace
}  // namespace gf

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gf-store-bench-sqlite." + std::to_string(::getpid()));
  auto sqlite = gf::OpenSqliteStore(dir / "state.db");
  if (!sqlite.ok()) {
    std::cerr << sqlite.error().ToString() << "\n";
    return 1;
  }
  std::int64_t sqlite_next = 1;
  benchmark::RegisterBenchmark(
      "Commit/sqlite", [&](benchmark::State& st) { gf::CommitSubmits(st, **sqlite, sqlite_next); })
      ->Arg(1)
      ->Arg(16)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);

  std::unique_ptr<gf::bench::PrivatePostgres> private_pg;
  std::string url;
  if (const char* env = std::getenv("GF_BENCH_POSTGRES_URL"); env != nullptr && *env != '\0') {
    url = env;
  } else if (auto started = gf::bench::PrivatePostgres::Start(GF_PG_FIXTURE); started.ok()) {
    private_pg = std::move(started).value();
    url = private_pg->url();
  } else {
    std::cerr << "gf_store_bench: " << started.error().ToString() << "\n";
  }
  std::unique_ptr<gf::Store> pg;
  if (!url.empty()) {
    gf::DropBenchSchema(url);
    auto opened = gf::OpenPostgresStore(url, {.schema = std::string(gf::kBenchSchema)});
    if (!opened.ok()) {
      std::cerr << opened.error().ToString() << "\n";
    } else {
      pg = std::move(opened).value();
    }
  }
  std::int64_t pg_next = 1;
  if (pg != nullptr) {
    benchmark::RegisterBenchmark("Commit/postgres",
                                 [&](benchmark::State& st) { gf::CommitSubmits(st, *pg, pg_next); })
        ->Arg(1)
        ->Arg(16)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  } else {
    std::cerr << "gf_store_bench: no PostgreSQL; only SQLite is measured\n";
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  pg.reset();
  if (!url.empty()) {
    gf::DropBenchSchema(url);
  }
  sqlite->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
