#!/usr/bin/env bash
# A private PostgreSQL for the tests and benchmarks: Debian's server binaries, a cluster in DIR,
# listening on 127.0.0.1 at a free port with its socket in DIR, trust authentication for the
# role "gf". CTest runs `start` as a FIXTURES_SETUP test and `stop` as its FIXTURES_CLEANUP.
#
#   pg_fixture.sh start DIR [postgres -c options...]   writes the URL to DIR/url
#   pg_fixture.sh stop DIR                              stops the server, removes DIR
#
# PostgreSQL refuses to run as root; as root the server runs as the `postgres` user the
# package creates (or `nobody`), and DIR belongs to that user.
set -euo pipefail

cmd=${1:?usage: pg_fixture.sh start|stop DIR}
dir=${2:?usage: pg_fixture.sh start|stop DIR}
shift 2

# The newest installed server version (/usr/lib/postgresql/15/bin on Debian 12).
bin_dir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [[ -z "$d" || ! -x "$d/initdb" ]]; then
    echo "pg_fixture: no PostgreSQL server under /usr/lib/postgresql; install the 'postgresql' package (scripts/bootstrap.sh)" >&2
    exit 1
  fi
  echo "$d"
}

run_as=()
if [[ $(id -u) -eq 0 ]]; then
  user=postgres
  id -u "$user" >/dev/null 2>&1 || user=nobody
  run_as=(runuser -u "$user" --)
fi

as_owner() { "${run_as[@]}" "$@"; }

stop() {
  local bin
  bin=$(bin_dir)
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$dir"
}

start() {
  local bin port url
  bin=$(bin_dir)
  stop  # a server left by an interrupted run
  mkdir -p "$dir"
  # The server's user must reach DIR: every folder above it must be searchable by others.
  if [[ ${#run_as[@]} -gt 0 ]]; then
    chown "$user" "$dir"
    if ! as_owner test -w "$dir"; then
      echo "pg_fixture: user '$user' cannot write $dir (a folder above it is not searchable by others)" >&2
      exit 1
    fi
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U gf -A trust -E UTF8 --locale=C --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  # A free port: try random ones until the server starts (another test run may hold one).
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 $*" \
        >/dev/null 2>&1; then
      url="postgresql://gf@127.0.0.1:$port/postgres"
      echo "$url" >"$dir/url.tmp"
      mv "$dir/url.tmp" "$dir/url"
      echo "pg_fixture: PostgreSQL at $url (data in $dir/data)"
      return 0
    fi
    grep -q "Address already in use" "$dir/server.log" 2>/dev/null || break
  done
  echo "pg_fixture: the server did not start; its log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
}

case "$cmd" in
  start) start "$@" ;;
  stop) stop ;;
  *) echo "usage: pg_fixture.sh start|stop DIR" >&2; exit 2 ;;
esac
