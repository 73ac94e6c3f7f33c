#!/usr/bin/env bash
# gpufleet run: an interactive job on a real terminal (tmux). The job's terminal has the window's
# size and follows its resizes; keys reach the job, Ctrl-C interrupts the job's foreground
# command and not the session; the session's exit code is the job's and the terminal is left as
# it was; closing the terminal cancels the job; a piped stdin is typed in; a user's session runs
# as that user, and nobody else (root included) may type into it; the refusals; the session's
# transcript in gpufleet logs.
source "$(dirname "$0")/lib.sh"
need tmux
need curl
tm() { tmux -S "$WORK/tmux.sock" "$@"; }
trap 'tm kill-server 2>/dev/null || true; cleanup' EXIT
start_up

screen() { tm capture-pane -p -t "$1"; }
screen_has() { screen "$1" | grep -Eq -- "$2"; }
keys() { tm send-keys -t "$1" "$2" Enter; }
# The job of the only session of NAME: the newest job whose name is NAME.
job_named() { gf queue --all --json | jq -r --arg n "$1" '[.jobs[] | select(.name == $n) | .id] | max // empty'; }

# ---- a shell in tmux at 80x24 ----
# The pane records the terminal settings before and after, and gpufleet run's exit status.
tm new-session -d -x 80 -y 24 -s s1 \
  "stty -g >'$WORK/s1.before'; GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' run --gpus 1 \
     --name shell1 -- bash --norc --noprofile -i; echo rc=\$? >'$WORK/s1.rc'; \
     stty -g >'$WORK/s1.after'; exec sleep 600"
wait_for "the shell's job to run" sh -c "[ -n \"\$(GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' queue --json | jq -r '.jobs[] | select(.name == \"shell1\" and .state == \"RUNNING\") | .id')\" ]"
job=$(job_named shell1)
[ "$(job_field "$job" interactive)" = true ] || fail "job $job is not --interactive"
keys s1 'echo "mark-$((6*7))"'
wait_for "typed command's output" screen_has s1 "^mark-42"
keys s1 'stty size; tty'
wait_for "the terminal's size 24x80" screen_has s1 "^24 80"
screen_has s1 "^/dev/pts/" || fail "the job's stdin is not a terminal:\n$(screen s1)"
ok "keys reach job $job's shell; its terminal is $(screen s1 | grep -m1 '^/dev/pts/'), 24x80"

tm resize-window -t s1 -x 100 -y 30
keys s1 'clear; stty size'
wait_for "the terminal's new size 30x100" screen_has s1 "^30 100"
ok "a window resize reaches the job"

keys s1 'sleep 300'
sleep 1
tm send-keys -t s1 C-c
keys s1 'echo "after-$((1+1))"'
wait_for "the shell to take a command after Ctrl-C" screen_has s1 "^after-2"
state_is "$job" RUNNING || fail "Ctrl-C ended job $job: $(job_state "$job")"
ok "Ctrl-C interrupted the job's sleep, not the session"

keys s1 'exit 7'
wait_for "gpufleet run to exit" test -s "$WORK/s1.rc"
[ "$(cat "$WORK/s1.rc")" = rc=7 ] || fail "gpufleet run exited $(cat "$WORK/s1.rc"), want the job's 7"
wait_for "the pane to record the terminal after the session" test -s "$WORK/s1.after"
cmp -s "$WORK/s1.before" "$WORK/s1.after" || fail "terminal settings not restored"
wait_for "job $job to end" sh -c "[ \"\$($GPUFLEET show --json $job | jq -r .state)\" = FAILED ]"
[ "$(job_field "$job" exit_code)" = 7 ] || fail "job $job exit code $(job_field "$job" exit_code)"
gf logs "$job" | grep -q "mark-42" || fail "the session is not in gpufleet logs $job"
ok "exit 7 ended the session with 7 and the job FAILED (exit 7); terminal restored; transcript in logs"

# ---- closing the terminal cancels the job ----
tm new-session -d -x 80 -y 24 -s s2 \
  "GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' run --name closing -- sleep 300"
wait_for "the closing job to run" sh -c "[ \"\$(GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' queue --json | jq -r '.jobs[] | select(.name == \"closing\") | .state')\" = RUNNING ]"
closing=$(job_named closing)
tm kill-session -t s2
wait_for "job $closing to be cancelled" state_is "$closing" CANCELLED
ok "closing the terminal cancelled job $closing: $(job_field "$closing" reason)"

# ---- a piped stdin ----
out=$(printf 'hello there\n' | gf run -- sh -c 'read x; echo "got:$x"; exit 3') && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "piped session exited $rc, want 3: $out"
echo "$out" | grep -q "got:hello there" || fail "piped session output: $out"
ok "a piped stdin is typed in; exit code 3 comes back"

# ---- users: a session runs as its user, and only its user types into it ----
if other_user; then
  out=$(runuser -u "$other" -- env GPUFLEET_SOCKET="$GPUFLEET_SOCKET" "$GPUFLEET" run -- id -un </dev/null)
  echo "$out" | grep -q "^$other" || fail "$other's session ran as: $out"
  tm new-session -d -x 80 -y 24 -s s3 \
    "runuser -u $other -- env GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' run --name theirs -- sh"
  wait_for "$other's shell to run" sh -c "[ \"\$(GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' queue --all --json | jq -r '.jobs[] | select(.name == \"theirs\") | .state')\" = RUNNING ]"
  theirs=$(job_named theirs)
  code=$(curl -s -o "$WORK/attach.out" -w '%{http_code}' --unix-socket "$GPUFLEET_SOCKET" \
    -X POST "http://localhost/api/v1/jobs/$theirs/terminal" -H 'Content-Type: application/json' -d '{"input_base64": "ZXhpdAo="}')
  [ "$code" = 404 ] && grep -q "owner's alone" "$WORK/attach.out" ||
    fail "root typing into $other's job $theirs: HTTP $code $(cat "$WORK/attach.out")"
  state_is "$theirs" RUNNING || fail "job $theirs ended after root's refused input"
  tm kill-session -t s3
  wait_for "job $theirs to be cancelled" state_is "$theirs" CANCELLED
  ok "$other's session ran as $other; root may not type into it: $(jq -r .error.message "$WORK/attach.out")"
fi

# ---- refusals ----
refused 2 "--array: not with gpufleet run" gf run --array 0-3 -- true
refused 2 "--nodes: gpufleet run starts a job on one node" gf run --nodes 2 -- true
refused 2 "command: missing" gf run --gpus 1
plain=$(submit -- sleep 300)
wait_for "job $plain to run" state_is "$plain" RUNNING
code=$(curl -s -o "$WORK/attach.out" -w '%{http_code}' --unix-socket "$GPUFLEET_SOCKET" \
  -X POST "http://localhost/api/v1/jobs/$plain/terminal" -H 'Content-Type: application/json' -d '{"input_base64": "eAo="}')
[ "$code" = 409 ] && grep -q "has no terminal" "$WORK/attach.out" ||
  fail "typing into a batch job: HTTP $code $(cat "$WORK/attach.out")"
ok "refused: --array, --nodes 2, no command, typing into a batch job"
