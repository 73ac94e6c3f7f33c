#!/usr/bin/env bash
# Users see and touch only their own jobs; jobs run as their submitter, never as root.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root to create a second user"; exit $SKIP; }
other=gf-e2e-user
id -u "$other" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$other"
as_other() { runuser -u "$other" -- env GPUFLEET_SOCKET="$GPUFLEET_SOCKET" "$GPUFLEET" "$@"; }
[ -x "$GPUFLEET" ] && runuser -u "$other" -- test -x "$GPUFLEET" ||
  { echo "skip: $other cannot execute $GPUFLEET"; exit $SKIP; }
start_up

secret=$WORK/secret
id=$(submit --gpus 1 -- sh -c "echo root-secret; while [ ! -e $secret ]; do sleep 0.05; done")
wait_for "root's job to run" state_is "$id" RUNNING
if as_other cancel "$id" 2>"$WORK/err"; then fail "another user cancelled root's job"; fi
grep -q "not found" "$WORK/err" || fail "cancel error: $(cat "$WORK/err")"
if as_other logs "$id" >"$WORK/out" 2>&1; then fail "another user read root's logs"; fi
grep -q root-secret "$WORK/out" && fail "root's output leaked"
if as_other show "$id" >/dev/null 2>&1; then fail "another user saw root's job"; fi
as_other queue --all | grep -qw "$id" && fail "root's job in the other user's queue"
state_is "$id" RUNNING || fail "root's job disturbed"
touch "$secret"
ok "a second user can neither cancel, read nor see root's job"

uid=$(id -u "$other")
mine=$(as_other submit --json --gpus 1 --workdir /tmp -- sh -c 'id -u; id -g; touch /root/gf-e2e-must-fail' | jq -r .id)
wait_for "user job $mine" sh -c "$GPUFLEET show --json $mine | jq -e '.state == \"FAILED\" or .state == \"COMPLETED\"'"
[ "$(as_other logs "$mine" | head -n1)" = "$uid" ] || fail "job ran as uid $(as_other logs "$mine" | head -n1), want $uid"
[ -e /root/gf-e2e-must-fail ] && { rm -f /root/gf-e2e-must-fail; fail "user job wrote as root"; }
[ "$(as_other show --json "$mine" | jq -r .user)" = "$other" ] || fail "owner"
gf show "$mine" >/dev/null || fail "root cannot see the user's job"
ok "the user's job ran as uid $uid, not root; root sees it"
