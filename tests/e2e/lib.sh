# Shared harness of the end-to-end tests: each test starts a real `gpufleet up` on simulated
# GPUs in a temp dir and drives it with the real CLI. Sourced by the test scripts.
# Waits poll with a deadline; nothing sleeps for a fixed time to let something happen.
set -euo pipefail

GPUFLEET=${GPUFLEET:?set GPUFLEET to the gpufleet binary}
WORK=$(mktemp -d /tmp/gf-e2e.XXXXXX)
chmod 755 "$WORK"  # a second user must reach the socket in it
export GPUFLEET_SOCKET=$WORK/gpufleet.sock
UP_PID=""
AGENT_PIDS=()  # gpufleet agent processes (start_agent), by node number
AGENT_WRAP=()  # a command start_agent runs the agent under (e.g. unshare), when set
SKIP=77  # ctest SKIP_RETURN_CODE

fail() {
  echo "FAIL: $*" >&2
  echo "--- gpufleet up log:" >&2
  tail -n 40 "$WORK/up.log" >&2 || true
  for f in "$WORK"/agent*.log; do  # the agents of a cluster test, if any
    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

ok() { echo "ok: $*"; }

# need TOOL...: fails the test when a tool that scripts/bootstrap.sh installs is missing. A skip
# would hide a missing bootstrap line: the test would pass in CI without ever running.
need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || fail "$tool is missing: scripts/bootstrap.sh installs it (make bootstrap)"
  done
}

cleanup() {
  if [ -n "${HOOK_PID:-}" ]; then kill "$HOOK_PID" 2>/dev/null || true; fi
  if [ -n "$UP_PID" ]; then kill "$UP_PID" 2>/dev/null || true; wait "$UP_PID" 2>/dev/null || true; fi
  for p in "${AGENT_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # Any job process left behind would be a bug the test already reported; do not leak it.
  # The pid files hold "PID STARTTIME": the pid is the first field. The job's process first,
  # then its shim (which would otherwise outlive the test, waiting on it).
  for f in "$WORK"/data/jobs/*/job.pid "$WORK"/agent*/jobs/*/job.pid \
           "$WORK"/data/jobs/*/shim.pid "$WORK"/agent*/jobs/*/shim.pid; do
    [ -f "$f" ] && kill -9 "$(cut -d' ' -f1 "$f")" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# wait_for DESCRIPTION CMD...: polls CMD until it succeeds, for at most 30 s (WAIT_FOR_SECONDS
# for a wait that takes many CLI calls: each starts a large ASan binary, seconds on a busy machine).
wait_for() {
  local desc=$1; shift
  local deadline=$((SECONDS + ${WAIT_FOR_SECONDS:-30}))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $desc"
    sleep 0.05
  done
}

gf() { "$GPUFLEET" "$@"; }

# other_user: a second user, $other (gf-e2e-user, created if missing), for as_other CMD... to run
# gpufleet as; fails, having said why, where the test is not root or that user cannot run it.
other_user() {
  other=gf-e2e-user
  if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null; then
    ok "skipped the second user's part (needs root)"
    return 1
  fi
  id -u "$other" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$other"
  runuser -u "$other" -- test -x "$GPUFLEET" || { ok "skipped: $other cannot run $GPUFLEET"; return 1; }
}
as_other() { runuser -u "$other" -- env GPUFLEET_SOCKET="$GPUFLEET_SOCKET" "$GPUFLEET" "$@"; }

# refused WANT_RC WANT_TEXT CMD...: the command fails with exit WANT_RC, saying WANT_TEXT.
refused() {
  local want_rc=$1 want=$2 rc=0; shift 2
  "$@" >"$WORK/out" 2>&1 || rc=$?
  [ "$rc" = "$want_rc" ] || fail "$*: exit $rc, want $want_rc: $(cat "$WORK/out")"
  grep -qF -- "$want" "$WORK/out" || fail "$*: said $(cat "$WORK/out"), want '$want'"
}

# start_webhook_receiver [FAIL_FIRST]: starts webhook_receiver.py (its first FAIL_FIRST POSTs get
# 503) and sets HOOK_URL to its http://127.0.0.1:PORT; it is stopped with the test.
HOOK_PID=""
start_webhook_receiver() {
  need python3
  python3 "$(dirname "${BASH_SOURCE[0]}")/webhook_receiver.py" "$WORK" "${1:-0}" &
  HOOK_PID=$!
  wait_for "the webhook receiver" test -s "$WORK/hook-port"
  HOOK_URL="http://127.0.0.1:$(cat "$WORK/hook-port")"
}

# hook_with JQ-FILTER: the body of some POST the receiver accepted matches the filter.
hook_with() {
  [ -s "$WORK/hooks.jsonl" ] && jq -e -s "map(.body) | any($1)" "$WORK/hooks.jsonl" >/dev/null
}

# start_up [ARGS...]: `gpufleet up` on 4 simulated H100s; ARGS go to it (e.g. --config FILE).
start_up() {
  "$GPUFLEET" up --gpus sim:4xH100-80GB --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" \
    --port 0 --kill-grace 2 --node-name e2e-node "$@" >>"$WORK/up.log" 2>&1 &
  UP_PID=$!
  wait_for "gpufleet up to answer" "$GPUFLEET" nodes
}

# make_pki [IP...]: a throwaway CA ($WORK/pki/ca.pem), a second one that signed nothing of ours
# (other-ca.pem), and a server certificate for localhost, 127.0.0.1 and the given IPs signed by
# the first (server.pem, server.key).
make_pki() {
  need openssl
  local pki=$WORK/pki key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  mkdir -p "$pki"
  for ca in ca other-ca; do
    openssl req -x509 $key -days 2 -subj "/CN=gf-e2e-$ca" -keyout "$pki/$ca.key" \
      -out "$pki/$ca.pem" 2>/dev/null
  done
  openssl req $key -subj /CN=localhost -keyout "$pki/server.key" -out "$pki/server.csr" 2>/dev/null
  local san="DNS:localhost,IP:127.0.0.1" ip
  for ip in "$@"; do san+=",IP:$ip"; done
  echo "subjectAltName=$san" >"$pki/server.ext"
  openssl x509 -req -days 2 -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" \
    -CAcreateserial -extfile "$pki/server.ext" -out "$pki/server.pem" 2>/dev/null
}

# start_server ARGS...: `gpufleet server` (no node of its own) on the test's socket and a free
# TCP port; sets SERVER_URL (https:// when ARGS give a certificate). Agents join with start_agent.
start_server() {
  "$GPUFLEET" server --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" --port 0 \
    --heartbeat 1s --kill-grace 1 "$@" >>"$WORK/up.log" 2>&1 &
  UP_PID=$!
  wait_for "the server to answer" "$GPUFLEET" nodes
  SERVER_URL=$(banner_url)
}

# banner_url: the http(s)://HOST:PORT of the TCP listener that `gpufleet up` or `server` printed
# in its banner ("API URL: ..."), for a server started with --port 0.
banner_url() {
  local url
  url=$(sed -n 's|.*API URL: *\(https*://[0-9.]*:[0-9]*\)/api/v1|\1|p' "$WORK/up.log")
  [ -n "$url" ] || fail "no API URL in the server's banner"
  echo "$url"
}

# start_agent N TOKEN_FILE [NAME [ARGS...]]: an agent for node NAME (default eN) with 2 simulated
# GPUs, over TCP (TLS with the test CA when the server has make_pki's certificate) with that node
# token; its data in $WORK/agentN, its log in $WORK/agentN.log. ARGS go to `gpufleet agent`; it
# runs under the command in AGENT_WRAP, if any (which must exec it: the pid is the agent's).
start_agent() {
  local ca=()
  [ -f "$WORK/pki/ca.pem" ] && ca=(--ca-file "$WORK/pki/ca.pem")
  "${AGENT_WRAP[@]}" "$GPUFLEET" agent --server "$SERVER_URL" "${ca[@]}" --token-file "$2" \
    --gpus sim:2xH100-80GB --data-dir "$WORK/agent$1" --node-name "${3:-e$1}" \
    --sample-interval 1s "${@:4}" >>"$WORK/agent$1.log" 2>&1 &
  AGENT_PIDS[$1]=$!
}

stop_up_hard() {
  kill -9 "$UP_PID"
  wait "$UP_PID" 2>/dev/null || true
  UP_PID=""
}

job_field() { gf show --json "$1" | jq -r ".$2"; }
job_state() { job_field "$1" state; }
state_is() { [ "$(job_state "$1")" = "$2" ]; }

# submit ARGS...: prints the new job's id.
submit() { gf submit --json "$@" | jq -r .id; }

pid_alive() { kill -0 "$1" 2>/dev/null; }

# A pid that is alive and not a zombie.
pid_running() {
  [ -r "/proc/$1/stat" ] || return 1
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)
  [ "$state" != "Z" ]
}
