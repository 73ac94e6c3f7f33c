#!/usr/bin/env bash
# The two executables behind `gpufleet` (docs/decisions/0011-a-small-client-executable.md): the
# client loads none of the daemons' libraries, and every command works through it — the client
# commands in its own process, the rest (up, --help, --version, a mistyped word) handed to
# gpufleetd by exec, from the build tree and from an installed layout (bin/ and
# libexec/gpufleet/), with a clear error when gpufleetd is missing.
source "$(dirname "$0")/lib.sh"
GPUFLEETD=${GPUFLEETD:?set GPUFLEETD to the gpufleetd binary}

# --- what the client links: no store (PostgreSQL and what libpq brings, SQLite), no spdlog
command -v ldd >/dev/null || fail "no ldd"
client_libs=$(ldd "$GPUFLEET")
for lib in libpq libpqxx libsqlite3 libgnutls libldap libkrb5 libgssapi libspdlog libfmt; do
  if grep -q "$lib" <<<"$client_libs"; then
    fail "the client links $lib:"$'\n'"$client_libs"
  fi
done
# The check would catch them: gpufleetd links the store's libraries.
grep -q libpq <<<"$(ldd "$GPUFLEETD")" || fail "gpufleetd links no libpq: is the check above blind?"
ok "the client links $(grep -c '=>' <<<"$client_libs") shared libraries, none of the store's"

# --- commands gpufleetd runs, through the client: the same output and exit code
[ "$(gf --version)" = "$("$GPUFLEETD" --version)" ] || fail "--version differs: $(gf --version)"
grep -q 'database schema' <<<"$(gf --version)" || fail "--version: $(gf --version)"
help=$(gf --help)
for command in up server agent sim tune backup submit queue top; do
  grep -qE "^  $command( |$)" <<<"$help" || fail "gpufleet --help lists no $command:"$'\n'"$help"
done
# (grep reads the whole output: with pipefail, a grep -q that stops early fails the pipe)
grep -q -- '--gpus' <<<"$(gf up --help)" || fail "gpufleet up --help has no --gpus"
grep -q 'Subcommands' <<<"$(gf --socket "$WORK/none.sock" --help)" ||
  fail "a global option before --help: $(gf --socket "$WORK/none.sock" --help 2>&1)"
refused 2 "'frobnicate' is not a gpufleet command" gf frobnicate 21
refused 2 "is not a level" gf --log-level bogus up --gpus sim:1xH100-80GB
ok "--version, --help, up --help and a mistyped command through the client"

# --- client commands run in the client: submit's own --help, and its errors
grep -q -- '--gpus' <<<"$(gf submit --help)" || fail "gpufleet submit --help"
refused 2 "is not a level" gf --log-level bogus submit -- true
refused 2 "only gpufleet submit and gpufleet run take a command" gf queue -- true
refused 1 "cannot reach gpufleet" gf --socket "$WORK/none.sock" queue

# --- gpufleet up through the client: exec keeps the process (a unit's MainPID), gpufleetd runs
start_up
[ "$(readlink "/proc/$UP_PID/exe")" = "$(readlink -f "$GPUFLEETD")" ] ||
  fail "pid $UP_PID runs $(readlink "/proc/$UP_PID/exe"), not gpufleetd"
id=$(submit --gpus 1 -- sh -c 'echo ran')
wait_for "job $id to finish" state_is "$id" COMPLETED
ok "gpufleet up through the client is gpufleetd in the same process; a job ran"

# --- the installed layout: bin/gpufleet finds libexec/gpufleet/gpufleetd
# place SRC DST: a hard link where both are on one file system, else a copy (the sanitized
# binaries are hundreds of MB). The kernel names a hard link in /proc/self/exe as a copy.
place() { ln -f "$1" "$2" 2>/dev/null || cp "$1" "$2"; }
mkdir -p "$WORK/prefix/bin" "$WORK/prefix/libexec/gpufleet" "$WORK/alone"
place "$GPUFLEET" "$WORK/prefix/bin/gpufleet"
place "$GPUFLEETD" "$WORK/prefix/libexec/gpufleet/gpufleetd"
[ "$("$WORK/prefix/bin/gpufleet" --version)" = "$("$GPUFLEETD" --version)" ] ||
  fail "installed layout: $("$WORK/prefix/bin/gpufleet" --version 2>&1)"
[ "$("$WORK/prefix/bin/gpufleet" show --json "$id" | jq -r .state)" = COMPLETED ] ||
  fail "installed layout: show"
place "$GPUFLEET" "$WORK/alone/gpufleet"
refused 1 "gpufleetd, which is not installed" "$WORK/alone/gpufleet" up
ok "installed layout; a client without gpufleetd says so"
