// The PostgreSQL backend of Store (DESIGN.md §3: state for many servers and controller
// fail-over, with PostgreSQL's own replication). Same schema versions, row mapping
// (store/rows.h), codec and validation as the SQLite backend, so that both pass one
// conformance suite and refuse bad batches with the same messages.
//
// Owned and used by one thread (the controller's), like every Store.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "store/store.h"

namespace gf {

struct PostgresStoreOptions {
  // The schema that holds gpufleet's tables; wins over the URL's `?schema=`. Empty: the URL's,
  // or "public". Created when missing (the role needs CREATE on the database for that).
  std::string schema{};
};

// Connects to `url` ("postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?schema=NAME&...]", any libpq
// URL parameter allowed), brings the schema to this build's version (once, even when several
// servers start together: migrations run under an advisory lock) and prepares the statements.
// Every Commit is one transaction with synchronous_commit=on: durable on the server (and on
// its synchronous standbys, if it has any) when Commit returns OK. A connection lost later is
// re-opened by the next call; the call that saw it fails with kUnavailable.
// Errors (the message names the URL without its password): kInvalidArgument for a URL that is
// not PostgreSQL's or a bad schema name; kUnavailable when the server cannot be reached or
// refuses the login (the message has libpq's reason, with host and port);
// kFailedPrecondition when the schema is newer than this gpufleet or belongs to another
// program; kInternal for other server errors.
Result<std::unique_ptr<Store>> OpenPostgresStore(std::string_view url,
                                                 const PostgresStoreOptions& options = {});

}  // namespace gf
