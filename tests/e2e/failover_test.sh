#!/usr/bin/env bash
# Controller fail-over (issue #6): two `gpufleet server` on one PostgreSQL; one leads, the other
# stands by without listening. Two agents and a submitting client know both URLs. kill -9 of
# the leader under submission load: the standby leads within 15 s, the agents and the client
# move to it, and every acknowledged job exists exactly once and runs exactly once.
source "$(dirname "$0")/lib.sh"
url_file=${GF_TEST_POSTGRES_URL_FILE:?run under ctest: it starts the test PostgreSQL}
db="$(cat "$url_file")?schema=gf_e2e_failover_$$"

# On failure also the jobs as the leader sees them and both servers' logs.
fail() {
  echo "FAIL: $*" >&2
  "$GPUFLEET" queue --all >&2 2>&1 | head -n 30 >&2 || true
  for f in "$WORK"/a.log "$WORK"/b.log "$WORK"/agent*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 12 "$f" >&2; }
  done
  [ -n "${GF_KEEP:-}" ] && cp -r "$WORK" "$GF_KEEP"
  exit 1
}

free_port() {  # a TCP port nothing listens on now
  local p
  while true; do
    p=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}
pa=$(free_port); pb=$(free_port)
[ "$pa" != "$pb" ] || pb=$((pa + 1))
servers=http://127.0.0.1:$pa,http://127.0.0.1:$pb

# start_one NAME PORT: a server with its own data dir and socket, on the shared database.
start_one() {
  "$GPUFLEET" server --db "$db" --data-dir "$WORK/$1" --listen-socket "$WORK/$1.sock" \
    --port "$2" --heartbeat 1s --node-timeout 20s --lease-ttl 4s --kill-grace 1 \
    >>"$WORK/$1.log" 2>&1 &
}
start_one a "$pa"
pid_a=$!
GPUFLEET_SOCKET=$WORK/a.sock
export GPUFLEET_SOCKET
wait_for "server a to lead" "$GPUFLEET" nodes
start_one b "$pb"
pid_b=$!
wait_for "server b to stand by" grep -q "standby; .* leads" "$WORK/b.log"
ss -Htln "sport = :$pb" | grep -q . && fail "the standby listens on its port"
ok "a leads; b stands by without listening"

gf node token create --output "$WORK/node.token" >/dev/null
gf token create --user root --role admin --output "$WORK/root.token" >/dev/null
SERVER_URL=$servers
for n in 1 2; do start_agent $n "$WORK/node.token"; done
wait_for "two nodes up" sh -c "$GPUFLEET nodes --json | jq -e '[.nodes[] | select(.state == \"up\")] | length == 2'"

# The client: submissions over TCP to both URLs, one after another; an acknowledged id (exit 0)
# goes to acked. Each job notes its start in runs.
runs=$WORK/runs
acked=$WORK/acked
client() {
  for i in $(seq 1 200); do
    [ -e "$WORK/stop-client" ] && break
    id=$(env -u GPUFLEET_SOCKET "$GPUFLEET" --server "$servers" --token-file "$WORK/root.token" \
      submit --json --gpus 1 --workdir /tmp -- sh -c "echo \$GPUFLEET_JOB_ID >> $runs; sleep 0.2" \
      2>>"$WORK/client.err" | jq -r .id) && [ -n "$id" ] && [ "$id" != null ] && echo "$id" >>"$acked"
  done
}
client &
client_pid=$!
WAIT_FOR_SECONDS=120 wait_for "20 acknowledged submissions" sh -c "[ \$(wc -l < $acked 2>/dev/null || echo 0) -ge 20 ]"

kill -9 "$pid_a"
killed_at=$SECONDS
wait_for "server b to lead" grep -q "API URL" "$WORK/b.log"
took=$((SECONDS - killed_at))
[ "$took" -le 15 ] || fail "b took ${took}s to lead"
ok "a killed; b leads after ${took}s"
export GPUFLEET_SOCKET=$WORK/b.sock
WAIT_FOR_SECONDS=120 wait_for "more acknowledged submissions through b" sh -c "[ \$(wc -l < $acked) -ge 40 ]"
touch "$WORK/stop-client"
wait "$client_pid" || true
UP_PID=$pid_b

n_acked=$(wc -l <"$acked")
done_all() {
  "$GPUFLEET" queue --all --json |
    jq -e --slurpfile a <(jq -s . "$acked") '[.jobs[] | select(.state == "COMPLETED") | .id] as $c | all($a[0][]; . as $i | $c | index($i) != null)' >/dev/null
}
wait_for "every acknowledged job completed" done_all
listed=$("$GPUFLEET" queue --all --json | jq '[.jobs[].id] | length == (unique | length)')
[ "$listed" = true ] || fail "a job id is listed twice"
while read -r id; do
  c=$(grep -c "^$id\$" "$runs" || true)
  [ "$c" = 1 ] || fail "acknowledged job $id ran $c times"
done <"$acked"
ok "$n_acked acknowledged jobs: each exists once and ran once across the fail-over"
[ -s "$WORK/client.err" ] && echo "client errors while no server led: $(sort "$WORK/client.err" | uniq -c | head -3)"
exit 0
