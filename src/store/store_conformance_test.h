// Store conformance suite: what every Store backend must do, written against store.h only
// (DESIGN.md §3: one suite, both backends; in the spirit of Ray's store_client_test_base.h).
//
// A backend joins the suite by instantiating it with a factory, in its own test file:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest,
//                            ::testing::Values(StoreBackendFactory{"sqlite", &MakeSqlite}),
//                            StoreBackendName);
//
// Test-only. Each test gets a fresh backend; tests do not share state.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "core/result.h"
#include "store/store.h"

namespace gf::testing {

// One backend with one empty place to keep its data (a temporary file for SQLite, a fresh
// schema for PostgreSQL). The place lives as long as this object, across Open() calls.
class StoreTestBackend {
 public:
  virtual ~StoreTestBackend() = default;
  // A new Store on the same place: data committed through an earlier Store (since destroyed)
  // must be visible. The suite holds at most one Store at a time.
  virtual Result<std::unique_ptr<Store>> Open() = 0;
  // Why the backend cannot run here (no test database configured), or nullopt when it can;
  // the suite skips with this message. Only for a run by hand: under CTest a backend's
  // fixture provides what it needs, and a missing one is a failure.
  virtual std::optional<std::string> SkipReason() const { return std::nullopt; }
};

struct StoreBackendFactory {
  std::string name;  // a test-name suffix: letters, digits, underscores
  std::function<std::unique_ptr<StoreTestBackend>()> make;
};

// How gtest prints a parameter (in failure messages): its name, not its bytes.
inline void PrintTo(const StoreBackendFactory& factory, std::ostream* os) {
  *os << factory.name;
}

// For INSTANTIATE_TEST_SUITE_P: names each instance after its backend.
inline std::string StoreBackendName(const ::testing::TestParamInfo<StoreBackendFactory>& info) {
  return info.param.name;
}

class StoreConformanceTest : public ::testing::TestWithParam<StoreBackendFactory> {
 protected:
  void SetUp() override;

  // Destroys the current Store and opens a new one on the same data.
  void Reopen();
  // Commits `batch` and fails the test if that failed.
  void MustCommit(const StoreBatch& batch);

  std::unique_ptr<StoreTestBackend> backend_;
  std::unique_ptr<Store> store_;
};

}  // namespace gf::testing
