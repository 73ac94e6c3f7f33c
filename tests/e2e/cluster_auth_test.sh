#!/usr/bin/env bash
# Users and nodes over TCP (issue #6): API tokens act as one Unix user with a role; a user's
# token cannot act as another user or as an admin; a node token is only good for its node and
# for the agent link; revoked tokens stop working at once; operators drain and resume nodes.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root to create a second user"; exit $SKIP; }
other=gf-e2e-user
id -u "$other" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$other"

start_server --node-timeout 5s
url=$SERVER_URL

# tcp TOKENFILE ARGS...: the CLI over TCP with that token (no Unix socket).
tcp() { local t=$1; shift; env -u GPUFLEET_SOCKET "$GPUFLEET" --server "$url" --token-file "$t" "$@"; }

# A node token bound to e1: another node name is refused, e1 joins.
gf node token create --node e1 --output "$WORK/e1.token" >/dev/null
start_agent 9 "$WORK/e1.token"
wait_for "the server to refuse node e9" grep -q "this node token is for node 'e1', not 'e9'" "$WORK/agent9.log"
kill -9 "${AGENT_PIDS[9]}"; wait "${AGENT_PIDS[9]}" 2>/dev/null || true
start_agent 1 "$WORK/e1.token"
wait_for "node e1 up" sh -c "$GPUFLEET nodes --json | jq -e '.nodes[] | select(.name == \"e1\" and .state == \"up\")'"
ok "a node token bound to e1 joins e1 and is refused for e9"

# The node token is not a user: job routes refuse it.
if tcp "$WORK/e1.token" queue >"$WORK/out" 2>&1; then fail "a node token listed jobs"; fi
grep -q "a node token is only for gpufleet agent" "$WORK/out" || fail "node token on a job route: $(cat "$WORK/out")"
ok "a node token cannot use the job routes"

# A user token for $other: jobs run as $other; it sees only its own jobs.
gf token create --user "$other" --output "$WORK/user.token" >/dev/null
root_job=$(submit --gpus 0 --workdir /tmp -- sleep 600)  # cancelled below; long enough for a loaded machine
mine=$(tcp "$WORK/user.token" submit --json --gpus 1 --workdir /tmp -- sh -c 'id -u' | jq -r .id)
wait_for "the user's job to end" sh -c "$GPUFLEET show --json $mine | jq -e '.state == \"COMPLETED\"'"
[ "$(tcp "$WORK/user.token" logs "$mine")" = "$(id -u "$other")" ] || fail "job ran as $(gf logs "$mine")"
[ "$(job_field "$mine" user)" = "$other" ] || fail "owner $(job_field "$mine" user)"
sees() { tcp "$1" queue --all --json | jq -e --argjson id "$2" '[.jobs[].id] | index($id) != null' >/dev/null; }
sees "$WORK/user.token" "$mine" || fail "the user does not see its own job"
sees "$WORK/user.token" "$root_job" && fail "the user sees root's job"
if tcp "$WORK/user.token" cancel "$root_job" 2>"$WORK/err"; then fail "the user cancelled root's job"; fi
grep -q "not found" "$WORK/err" || fail "cancel: $(cat "$WORK/err")"
if tcp "$WORK/user.token" token create --user root >"$WORK/out" 2>&1; then fail "a user made a root token"; fi
grep -q "only an admin" "$WORK/out" || fail "token create: $(cat "$WORK/out")"
if tcp "$WORK/user.token" node drain e1 --reason x >"$WORK/out" 2>&1; then fail "a user drained a node"; fi
grep -q "only an operator" "$WORK/out" || fail "drain: $(cat "$WORK/out")"
ok "a user token runs jobs as $other, sees and touches only its own, cannot mint tokens or drain"

# An operator token sees every job and drains; the drained node takes no new job.
gf token create --user "$other" --role operator --output "$WORK/op.token" >/dev/null
sees "$WORK/op.token" "$root_job" || fail "the operator does not see root's job"
tcp "$WORK/op.token" node drain e1 --reason "fan check" | grep -q draining || fail "drain answer"
wait_for "e1 draining" sh -c "$GPUFLEET nodes --json | jq -e '.nodes[] | select(.name == \"e1\" and .state == \"draining\" and .state_reason == \"fan check\")'"
gf cancel "$root_job" >/dev/null
wait_for "e1 drained" sh -c "$GPUFLEET nodes --json | jq -e '.nodes[] | select(.name == \"e1\" and .state == \"drained\")'"
held=$(submit --gpus 1 --workdir /tmp -- true)
# No wait needed: a submission is answered after its own scheduling pass, so a job placed on
# e1 would already be STARTING here.
state_is "$held" PENDING || fail "a job started on a drained node: $(job_state "$held")"
tcp "$WORK/op.token" node resume e1 >/dev/null
wait_for "the held job to run after resume" sh -c "$GPUFLEET show --json $held | jq -e '.state == \"COMPLETED\"'"
ok "an operator drains e1 (draining, then drained) and resumes it"

# Revoking a token stops it at once; a made-up or garbled token is refused.
id=$(gf token list --json | jq -r --arg u "$other" '[.tokens[] | select(.user == $u and .role == "user")][0].id')
gf token revoke "$id" >/dev/null
if tcp "$WORK/user.token" queue >"$WORK/out" 2>&1; then fail "a revoked token still works"; fi
grep -q "revoked" "$WORK/out" || fail "revoked: $(cat "$WORK/out")"
printf 'gft_aaaaaaaaaaaa_%064d\n' 0 >"$WORK/fake.token"; chmod 600 "$WORK/fake.token"
if tcp "$WORK/fake.token" queue >"$WORK/out" 2>&1; then fail "a made-up token works"; fi
grep -q "no token aaaaaaaaaaaa" "$WORK/out" || fail "fake: $(cat "$WORK/out")"
ok "revoked and made-up tokens are refused"
