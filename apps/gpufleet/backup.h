// `gpufleet backup` and `gpufleet restore`: a copy of the store's SQLite file taken while the
// daemon runs, and a copy put back while it is stopped (docs/install.md#backup-and-restore,
// decision 0010). A PostgreSQL store is backed up with PostgreSQL's own tools; both commands
// say so and how.
#pragma once

#include <string>

namespace gf {

struct StoreFileOptions {
  std::string config;    // settings file: its [up] data_dir and db, as `gpufleet up` reads them
  std::string data_dir;  // "" = the [up] key, else DefaultDataDir()
  std::string db;        // "" = the [up] key, else DATA_DIR/state.db
  std::string file;      // backup: --output; restore: --input
};

// Both return the process exit code: 0, or 1 with the reason on stderr.
int RunBackup(const StoreFileOptions& options);
int RunRestore(const StoreFileOptions& options);

}  // namespace gf
