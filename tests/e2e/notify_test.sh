#!/usr/bin/env bash
# Notifications (issue #8): a webhook receiver started here (python3's http.server) records each
# POST and answers 503 to the first, so the retry is exercised; it must get job_end, job_failed,
# preempted, quota_80 and quota_100 with the right job, user and team. A stand-in sendmail
# ([notify] sendmail) gets an e-mail subscription's message. Bad flags are refused naming the
# flag, and (as root) a second user may not subscribe to another team or to everything.
source "$(dirname "$0")/lib.sh"

me=$(id -un)

# The receiver (webhook_receiver.py): one JSON line per accepted POST in hooks.jsonl; the
# first POST gets 503.
start_webhook_receiver 1
hook_url="$HOOK_URL/gpufleet?token=abc"

# The stand-in sendmail: each message (stdin) in its own file, its arguments first.
mkdir -p "$WORK/mail"
cat >"$WORK/sendmail" <<SH
#!/bin/sh
f=\$(mktemp "$WORK/mail/m.XXXXXX")
{ echo "ARGS: \$*"; cat; } >"\$f"
SH
chmod 755 "$WORK/sendmail"

# Team cv (this user's) has a 0.005 GPU-hour budget: 18 GPU-seconds, 80 % at 14.4.
cat >"$WORK/policy.toml" <<TOML
[scheduler]
min_run_time = "0s"
[team.cv]
members = ["$me"]
guaranteed_gpus = 2
gpu_hour_budget = 0.005
[notify]
sendmail = "$WORK/sendmail"
email_from = "gpufleet@e2e.example.com"
webhook_retry_delay = "1s"
webhook_allow = ["127.0.0.1"]  # the receiver below: loopback is refused unless listed
TOML
"$GPUFLEET" up --config "$WORK/policy.toml" --gpus sim:2xH100-80GB --data-dir "$WORK/data" \
  --listen-socket "$GPUFLEET_SOCKET" --port 0 --kill-grace 2 --node-name e2e-node \
  >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" "$GPUFLEET" nodes

# Bad input names the flag and the fix.
expect_refused() {  # expect_refused TEXT ARGS...: `gpufleet notify add ARGS` fails saying TEXT
  local text=$1; shift
  if gf notify add "$@" 2>"$WORK/err"; then fail "notify add $* was accepted"; fi
  grep -q -- "$text" "$WORK/err" || fail "notify add $*: $(cat "$WORK/err")"
}
expect_refused "--webhook: 'ftp://h/x' is not a webhook URL; give http://" --webhook ftp://h/x
expect_refused "--email: 'nobody' is not an e-mail address" --email nobody
expect_refused "--events: event 'job_done' is not one gpufleet notifies of; use job_end" \
  --email a@example.com --events job_end,job_done
expect_refused "give one of --webhook URL or --email ADDRESS" --team cv
# The server POSTs as root: the cloud metadata address is not for users to aim it at.
expect_refused "target: host 169.254.169.254, a link-local address" \
  --webhook http://169.254.169.254/latest/meta-data/
ok "bad subscriptions are refused naming the flag"

gf notify add --webhook "$hook_url" --team cv | grep -q "^Subscription sub-" ||
  fail "team subscription not created"
gf notify add --email "$me@example.com" --events job_failed >/dev/null
[ "$(gf notify list --json | jq '.subscriptions | length')" = 2 ] ||
  fail "notify list: $(gf notify list)"
gf notify list | grep -q "team cv" || fail "notify list: $(gf notify list)"
ok "subscribed: webhook for team cv, e-mail for my failed jobs"


done_ok=$(submit --gpus 1 -- true)
wait_for "job $done_ok to complete" state_is "$done_ok" COMPLETED
failed=$(submit --gpus 1 -- false)
wait_for "job $failed to fail" state_is "$failed" FAILED
wait_for "job_end of $done_ok" hook_with \
  ".kind == \"job_end\" and .job == $done_ok and .user == \"$me\" and .team == \"cv\""
wait_for "job_failed of $failed" hook_with \
  ".kind == \"job_failed\" and .job == $failed and .user == \"$me\" and .team == \"cv\""
test -s "$WORK/hook-503" || fail "the receiver never answered 503"
jq -e -s 'all(.content_type == "application/json" and .path == "/gpufleet?token=abc")' \
  "$WORK/hooks.jsonl" >/dev/null || fail "POSTs: $(cat "$WORK/hooks.jsonl")"
ok "webhook got job_end and job_failed (the first POST answered 503 and was retried)"

mail_has() { grep -l "event: job_failed" "$WORK"/mail/m.* 2>/dev/null | head -1 | grep -q .; }
wait_for "the e-mail of job $failed" mail_has
mail=$(grep -l "event: job_failed" "$WORK"/mail/m.* | head -1)
grep -q "^ARGS: -t -oi$" "$mail" || fail "sendmail arguments: $(cat "$mail")"
grep -q "^From: gpufleet@e2e.example.com$" "$mail" || fail "mail: $(cat "$mail")"
grep -q "^To: $me@example.com$" "$mail" || fail "mail: $(cat "$mail")"
grep -q "^Subject: \[gpufleet\] job $failed .*failed" "$mail" || fail "mail: $(cat "$mail")"
grep -q "^job: $failed$" "$mail" || fail "mail: $(cat "$mail")"
[ "$(ls "$WORK"/mail | wc -l)" = 1 ] || fail "mails for events not subscribed: $(ls "$WORK"/mail)"
ok "sendmail got the e-mail of the failed job, and nothing else"

# Preemption: a low job holds both GPUs; a high one takes them.
low=$(submit --gpus 2 --priority low -- sh -c "while [ ! -e $WORK/release ]; do sleep 0.05; done")
wait_for "low job to run" state_is "$low" RUNNING
high=$(submit --gpus 2 --priority high -- sh -c "while [ ! -e $WORK/release ]; do sleep 0.05; done")
wait_for "preempted of $low" hook_with ".kind == \"preempted\" and .job == $low and .team == \"cv\""
wait_for "high job to run" state_is "$high" RUNNING
ok "webhook got preempted for job $low"

# The high job keeps both GPUs until the team passes its whole budget (18 GPU-seconds).
wait_for "quota_80 of cv" hook_with '.kind == "quota_80" and .team == "cv" and .job == null'
wait_for "quota_100 of cv" hook_with '.kind == "quota_100" and .team == "cv" and .job == null'
[ "$(jq -s 'map(select(.body.kind == "quota_80")) | length' "$WORK/hooks.jsonl")" = 1 ] ||
  fail "quota_80 sent more than once"
gf show "$high" >/dev/null
ok "webhook got quota_80 and quota_100 of team cv, once each"
touch "$WORK/release"

if [ "$(id -u)" = 0 ]; then
  other=gf-e2e-user
  id -u "$other" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$other"
  as_other() { runuser -u "$other" -- env GPUFLEET_SOCKET="$GPUFLEET_SOCKET" "$GPUFLEET" "$@"; }
  if runuser -u "$other" -- test -x "$GPUFLEET"; then
    if as_other notify add --webhook "$hook_url" --team cv 2>"$WORK/err"; then
      fail "a non-member subscribed to team cv"
    fi
    grep -q "is not a member of team cv" "$WORK/err" || fail "team refusal: $(cat "$WORK/err")"
    if as_other notify add --email x@example.com --all 2>"$WORK/err"; then
      fail "a user subscribed to the whole cluster"
    fi
    grep -q "only an admin" "$WORK/err" || fail "--all refusal: $(cat "$WORK/err")"
    [ "$(as_other notify list --json | jq '.subscriptions | length')" = 0 ] ||
      fail "another user sees root's subscriptions"
    id=$(gf notify list --json | jq -r '.subscriptions[0].id')
    if as_other notify remove "$id" 2>"$WORK/err"; then fail "another user removed $id"; fi
    grep -q "not found" "$WORK/err" || fail "remove refusal: $(cat "$WORK/err")"
    ok "another user may not subscribe to team cv or everything, nor see or remove root's"
  else
    echo "note: $other cannot execute $GPUFLEET; the other-user checks are skipped"
  fi
fi

id=$(gf notify list --json | jq -r '.subscriptions[0].id')
gf notify remove "$id" | grep -q "removed" || fail "notify remove"
[ "$(gf notify list --json | jq '.subscriptions | length')" = 1 ] || fail "not removed"
ok "notify remove"
