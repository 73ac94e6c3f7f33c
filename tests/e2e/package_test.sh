#!/usr/bin/env bash
# The Debian package end to end (issue #25; docs/install.md): built from this build tree with
# the project's CPack rules, installed with dpkg, its units checked by `systemd-analyze verify`,
# the daemon started as gpufleet.service's ExecStart= would start it (no running systemd is
# needed: the unit's environment file, state and runtime directories and open-file limit are
# applied by hand), a job submitted, a backup taken while it runs, an upgrade to a newer build
# of the package that keeps every job and the admin's settings, a downgrade refused, a restore
# from the backup, and the package removed and purged.
#
# It packages the debug build's binary (what `make test` built): the same install rules and
# CPack settings as `make deb`, which packages the release build, without a release build in
# the test (tens of minutes on a small machine). Installs into the real system, so it needs
# root and skips on a machine where gpufleet is installed or has state (a real install).
source "$(dirname "$0")/lib.sh"
BUILD=${GF_BUILD_DIR:?set GF_BUILD_DIR to the build tree that holds CPackConfig.cmake}
UNIT=/lib/systemd/system/gpufleet.service
STATE=/var/lib/gpufleet

[ "$(id -u)" -eq 0 ] || { echo "skip: installs a package into the system: needs root"; exit $SKIP; }
# A missing tool fails the test instead of skipping it: `make test` bootstraps first, so a tool
# missing here is a line missing from scripts/bootstrap.sh, which a skip would hide.
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps file systemd-analyze sqlite3 man; do
  command -v "$tool" >/dev/null || fail "no $tool: scripts/bootstrap.sh must install it"
done
if dpkg-query -W gpufleet >/dev/null 2>&1 || [ -n "$(ls -A "$STATE" 2>/dev/null)" ] ||
  [ -e /etc/gpufleet ]; then
  echo "skip: gpufleet is installed here, or was (state in $STATE, or /etc/gpufleet): not a test bench"
  exit $SKIP
fi

DAEMON_PID=""
stop_daemon() {
  [ -n "$DAEMON_PID" ] || return 0
  kill -TERM "$DAEMON_PID" 2>/dev/null || true  # KillMode=process: the daemon alone
  wait "$DAEMON_PID" 2>/dev/null || true
  DAEMON_PID=""
}

package_cleanup() {
  stop_daemon
  for f in "$STATE"/jobs/*/job.pid "$STATE"/jobs/*/shim.pid; do
    [ -f "$f" ] && kill -9 "$(cut -d' ' -f1 "$f")" 2>/dev/null || true
  done
  dpkg --purge gpufleet >/dev/null 2>&1 || true
  rm -rf "$STATE" /run/gpufleet /etc/gpufleet 2>/dev/null || true  # a mount point stays
  cleanup
}
trap package_cleanup EXIT

# build_package N: the package of this build, Debian revision N, in $WORK/pkgN; prints its path.
build_package() {
  cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$WORK/pkg$1" \
    -D CPACK_DEBIAN_PACKAGE_RELEASE="$1" >"$WORK/cpack$1.log" 2>&1 ||
    { tail -n 20 "$WORK/cpack$1.log" >&2; df -h "$WORK" "$BUILD" >&2; fail "cpack (build $1)"; }
  rm -rf "$WORK/pkg$1/_CPack_Packages"  # the staging tree: hundreds of MB
  ls "$WORK/pkg$1"/gpufleet_*.deb
}

# unit_key KEY: the value of KEY= in gpufleet.service.
unit_key() { sed -n "s/^$1=//p" "$UNIT"; }

# start_daemon: gpufleet.service's ExecStart=, run as systemd would run it: the state and
# runtime directories made with the unit's modes, EnvironmentFile= read, $VARIABLES split into
# words, LimitNOFILE= set; the client finds it on the system socket (no GPUFLEET_SOCKET).
start_daemon() {
  install -d -m "$(unit_key StateDirectoryMode)" "/var/lib/$(unit_key StateDirectory)"
  install -d -m "$(unit_key RuntimeDirectoryMode)" "/run/$(unit_key RuntimeDirectory)"
  local exec_start nofile hard
  exec_start=$(unit_key ExecStart)
  # LimitNOFILE=, or the most this machine allows (a container may cap it below the unit's).
  nofile=$(unit_key LimitNOFILE)
  hard=$(ulimit -Hn)
  [ "$hard" = unlimited ] || [ "$hard" -ge "$nofile" ] || nofile=$hard
  (
    set -a; . /etc/default/gpufleet; set +a
    ulimit -n "$nofile"
    eval "exec $exec_start"
  ) >>"$WORK/up.log" 2>&1 &
  DAEMON_PID=$!
  wait_for "the packaged gpufleet to answer" gf nodes
}

unset GPUFLEET_SOCKET
BUILT=$GPUFLEET
GPUFLEET=/usr/bin/gpufleet  # every command from here on is the installed one

# --- make the package, look inside
deb1=$(build_package 1)
contents=$(dpkg-deb -c "$deb1")
for path in ./usr/bin/gpufleet ./usr/libexec/gpufleet/gpufleetd ./usr/share/man/man1/gpufleet.1.gz \
            ./etc/gpufleet/gpufleet.toml \
            ./etc/default/gpufleet ./lib/systemd/system/gpufleet.service \
            ./lib/systemd/system/gpufleet-server.service ./lib/systemd/system/gpufleet-agent.service \
            ./usr/share/doc/gpufleet/install.md; do
  grep -q " $path\$" <<<"$contents" || fail "the package has no $path"
done
dpkg-deb -I "$deb1" conffiles | grep -qx /etc/gpufleet/gpufleet.toml || fail "gpufleet.toml is not a conffile"
dpkg-deb -f "$deb1" Depends | grep -q libsqlite3 || fail "Depends lacks libsqlite3: $(dpkg-deb -f "$deb1" Depends)"
ok "package built: $(basename "$deb1")"

# --- install; the units and the manual page
dpkg -i "$deb1" >"$WORK/dpkg1.log" 2>&1 || { cat "$WORK/dpkg1.log" >&2; fail "dpkg -i"; }
[ "$(gf --version)" = "$("$BUILT" --version)" ] || fail "the installed binary is not this build's"
# A slim container image tells dpkg to leave manual pages out (path-exclude): then the page is
# checked in the package, and verify does not look for it (it runs `man` for Documentation=).
man_check=(--man=yes)
if grep -qs '^path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg.d/*; then
  man_check=(--man=no)
  dpkg-deb --fsys-tarfile "$deb1" | tar -xO ./usr/share/man/man1/gpufleet.1.gz >"$WORK/gpufleet.1.gz"
else
  man -w gpufleet >/dev/null || fail "man finds no gpufleet page"
  cp /usr/share/man/man1/gpufleet.1.gz "$WORK/gpufleet.1.gz"
fi
zcat "$WORK/gpufleet.1.gz" | grep -q '^\.SS "gpufleet backup"' || fail "the manual has no backup command"
verify=$(systemd-analyze verify "${man_check[@]}" /lib/systemd/system/gpufleet.service \
  /lib/systemd/system/gpufleet-server.service /lib/systemd/system/gpufleet-agent.service 2>&1) ||
  fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify warns: $verify"
ok "installed; units verified; man gpufleet"

# --- the admin's settings: simulated GPUs, any free TCP port
sed -i '/^\[up\]/a gpus = "sim:2xH100-80GB"\nport = 0\nnode_name = "pkg-node"\nkill_grace = "2s"' \
  /etc/gpufleet/gpufleet.toml
start_daemon
grep -q "store: *$STATE/state.db" "$WORK/up.log" || fail "the store is not in $STATE"
grep -q "API socket: /run/gpufleet/gpufleet.sock" "$WORK/up.log" || fail "not on the system socket"
[ "$(stat -c %a "$STATE")" = 700 ] || fail "$STATE is not 0700"
[ "$(stat -c %a "$STATE/state.db")" = 600 ] || fail "state.db is not 0600"

done_job=$(submit --gpus 1 -- sh -c 'echo packaged-hello')
WAIT_FOR_SECONDS=60 wait_for "job $done_job to complete" state_is "$done_job" COMPLETED
gf logs "$done_job" | grep -q packaged-hello || fail "job $done_job's log"
running_job=$(submit --gpus 1 -- sleep 600)
WAIT_FOR_SECONDS=60 wait_for "job $running_job to run" state_is "$running_job" RUNNING
ok "started as the unit would; jobs $done_job (done) and $running_job (running)"

# --- a backup while the daemon runs; then a job the backup will not have
out=$(gf backup --output "$WORK/backup.db") || fail "backup: $out"
grep -q "2 jobs" <<<"$out" || fail "backup says: $out"
[ "$(stat -c %a "$WORK/backup.db")" = 600 ] || fail "the backup is not 0600"
late_job=$(submit --gpus 1 -- true)
WAIT_FOR_SECONDS=60 wait_for "job $late_job to complete" state_is "$late_job" COMPLETED
ok "backup taken live: $out"

# --- upgrade to a newer build: the daemon restarted on it keeps every job and the settings
stop_daemon
pid_running "$(cut -d' ' -f1 "$STATE/jobs/$running_job/shim.pid")" || fail "job $running_job died with the daemon"
deb2=$(build_package 2)
dpkg -i "$deb2" >"$WORK/dpkg2.log" 2>&1 || { cat "$WORK/dpkg2.log" >&2; fail "dpkg -i (upgrade)"; }
[ "$(dpkg-query -W -f='${Version}' gpufleet)" = "$(dpkg-deb -f "$deb2" Version)" ] || fail "not upgraded"
grep -q '^gpus = "sim:2xH100-80GB"' /etc/gpufleet/gpufleet.toml || fail "the upgrade lost the admin's settings"
start_daemon
state_is "$done_job" COMPLETED && state_is "$late_job" COMPLETED || fail "the upgrade lost finished jobs"
WAIT_FOR_SECONDS=60 wait_for "job $running_job re-attached" state_is "$running_job" RUNNING
ok "upgraded to $(dpkg-deb -f "$deb2" Version): every job kept, job $running_job still running"

# --- a downgrade: a database a newer gpufleet wrote is refused, naming both versions
schema=$(gf --version | sed -n 's/.*database schema \([0-9]*\)).*/\1/p')
[ -n "$schema" ] || fail "gpufleet --version names no schema: $(gf --version)"
stop_daemon
sqlite3 "$STATE/state.db" "INSERT INTO schema_version VALUES ($((schema + 1)), 'newer', 0)"
if refused=$( (set -a; . /etc/default/gpufleet; set +a; eval "exec timeout 60 $(unit_key ExecStart)") 2>&1); then
  fail "gpufleet up opened a newer database"
fi
grep -q "database schema version $((schema + 1)) is newer than this gpufleet ($schema)" <<<"$refused" &&
  grep -q "restore a backup taken before the upgrade" <<<"$refused" || fail "downgrade refused as: $refused"
sqlite3 "$STATE/state.db" "DELETE FROM schema_version WHERE version = $((schema + 1))"
ok "a newer database refused: $(tail -n 1 <<<"$refused")"

# --- restore: refused while the daemon runs; then the backup's jobs and nothing after
start_daemon
if out=$(gf restore --input "$WORK/backup.db" 2>&1); then fail "restore ran beside the daemon"; fi
grep -q "a gpufleet daemon is running on $STATE" <<<"$out" || fail "restore refused as: $out"
stop_daemon
out=$(gf restore --input "$WORK/backup.db") || fail "restore: $out"
replaced=$(sed -n 's/.*the database it replaced: //p' <<<"$out")
[ -f "$replaced" ] || fail "the replaced database was not kept: $out"
start_daemon
state_is "$done_job" COMPLETED || fail "the restore lost job $done_job"
WAIT_FOR_SECONDS=60 wait_for "job $running_job re-attached after the restore" state_is "$running_job" RUNNING
if gf show "$late_job" >/dev/null 2>&1; then fail "job $late_job, after the backup, survived the restore"; fi
ok "restored: jobs $done_job and $running_job back, $late_job gone"

# --- remove, then purge
gf cancel "$running_job" >/dev/null
WAIT_FOR_SECONDS=60 wait_for "job $running_job to be cancelled" state_is "$running_job" CANCELLED
stop_daemon
dpkg -r gpufleet >"$WORK/dpkg-r.log" 2>&1 || { cat "$WORK/dpkg-r.log" >&2; fail "dpkg -r"; }
[ ! -e /usr/bin/gpufleet ] || fail "dpkg -r left the binary"
[ ! -e /usr/libexec/gpufleet/gpufleetd ] || fail "dpkg -r left gpufleetd"
[ -f /etc/gpufleet/gpufleet.toml ] || fail "dpkg -r took the settings (a conffile stays until purge)"
dpkg -P gpufleet >/dev/null 2>&1 || fail "dpkg -P"
[ ! -e /etc/gpufleet/gpufleet.toml ] || fail "the purge left gpufleet.toml"
[ -f "$STATE/state.db" ] || fail "the purge took the job history (it is the admin's to delete)"
ok "removed and purged; $STATE kept"
