#!/usr/bin/env bash
# gpufleet top: one plain frame with --once, and the live view in a real terminal (tmux at
# 80x24 and 200x50) fed by the watch streams: GPU rows, jobs and users on screen, the process
# panel with each job's processes, a new job appearing without a restart, the keys (select,
# cancel after a confirmation, sort), q and Ctrl-C leaving with exit 0 and the terminal as it
# was.
source "$(dirname "$0")/lib.sh"
need tmux
tm() { tmux -S "$WORK/tmux.sock" "$@"; }
trap 'tm kill-server 2>/dev/null || true; cleanup' EXIT
start_up
me=$(id -un)

first=$(submit --gpus 2 --name first-job -- sleep 300)
wait_for "job $first to run" state_is "$first" RUNNING

# ---- --once: one frame on stdout, for scripts ----
frame=$(gf top --once --width 80 --height 24)
echo "$frame" | grep -q "^GPUs 2/4 allocated" || fail "totals line: $frame"
[ "$(echo "$frame" | grep -c '^e2e-node .*H100')" = 4 ] || fail "want 4 GPU rows: $frame"
echo "$frame" | grep -Eq "^ *$first +$me +RUNNING +2 " || fail "job row: $frame"
[ -z "$(echo "$frame" | awk 'length > 80')" ] || fail "a line wider than 80: $frame"
narrow=$(gf top --once --width 40 --height 10)
[ "$(echo "$narrow" | wc -l)" -le 10 ] && [ -z "$(echo "$narrow" | awk 'length > 40')" ] ||
  fail "40x10 frame does not fit: $narrow"
ok "--once prints a frame that fits"

if gf top </dev/null >"$WORK/out" 2>"$WORK/err"; then fail "top without a terminal succeeded"; fi
grep -q "needs a terminal" "$WORK/err" || fail "no-TTY error: $(cat "$WORK/err")"
ok "without a terminal and without --once: $(cat "$WORK/err")"

# ---- live, in tmux ----
# The pane records the terminal settings before and after top, and top's exit status.
start_top() {  # NAME [COLUMNS LINES]
  tm new-session -d -x "${2:-80}" -y "${3:-24}" -s "$1" \
    "stty -g >'$WORK/$1.before'; GPUFLEET_SOCKET='$GPUFLEET_SOCKET' '$GPUFLEET' top; \
     echo \$? >'$WORK/$1.rc'; stty -g >'$WORK/$1.after'; exec sleep 600"
}
screen() { tm capture-pane -p -t "$1"; }
screen_has() { screen "$1" | grep -Eq -- "$2"; }
pane() { tm display -p -t "$1" "$2"; }

# A session's top has left: exit 0, normal screen back, cursor shown, same stty settings.
expect_clean_exit() {  # NAME HOW
  wait_for "top to exit after $2" test -s "$WORK/$1.rc"
  [ "$(cat "$WORK/$1.rc")" = 0 ] || fail "top exited $(cat "$WORK/$1.rc") after $2"
  wait_for "the pane to record the terminal after top" test -s "$WORK/$1.after"
  [ "$(pane "$1" '#{alternate_on}')" = 0 ] || fail "still on the alternate screen after $2"
  [ "$(pane "$1" '#{cursor_flag}')" = 1 ] || fail "cursor still hidden after $2"
  cmp -s "$WORK/$1.before" "$WORK/$1.after" ||
    fail "terminal settings not restored after $2: $(cat "$WORK/$1.before") vs $(cat "$WORK/$1.after")"
}

start_top live
wait_for "top to show the GPUs" screen_has live "^e2e-node +3 "
[ "$(pane live '#{alternate_on}')" = 1 ] || fail "top is not on the alternate screen"
[ "$(pane live '#{cursor_flag}')" = 0 ] || fail "top left the cursor visible"
view=$(screen live)
[ "$(echo "$view" | grep -c '^e2e-node .*H100')" = 4 ] || fail "want 4 GPU rows:\n$view"
echo "$view" | grep -Eq "^e2e-node .* $first +$me *$" || fail "GPU row with job and user:\n$view"
echo "$view" | grep -Eq "^ *$first +$me +RUNNING" || fail "job row:\n$view"
echo "$view" | grep -q "^GPUs 2/4 allocated" || fail "totals:\n$view"
echo "$view" | grep -q "^j/k: select job" || fail "no keys line at the bottom:\n$view"
ok "live view: 4 GPU rows, job $first of $me"

second=$(submit --gpus 1 --name second-job -- sleep 300)
wait_for "job $second to appear in the running top" screen_has live "^ *$second +$me +"
wait_for "its GPU to show it" screen_has live "^e2e-node .* $second +$me *$"
ok "job $second appeared without restarting top"

tm send-keys -t live q
expect_clean_exit live "q"
ok "q: exit 0, terminal restored"

start_top ctrlc
wait_for "the second top to show the GPUs" screen_has ctrlc "^e2e-node +3 "
tm send-keys -t ctrlc C-c
expect_clean_exit ctrlc "Ctrl-C"
ok "Ctrl-C: exit 0, terminal restored"

# ---- wide, with the keys: 200x50 ----
# The processes of the two jobs: their pids, as the agent attributes them (sim GPUs list the
# processes whose environment names the GPU).
start_top wide 200 50
wait_for "the process panel to show job $first's sleep" screen_has wide "^e2e-node +[0-9] +[0-9]+ +$me +$first .* sleep 300 *$"
view=$(screen wide)
[ -z "$(echo "$view" | awk 'length > 200')" ] || fail "a line wider than 200:\n$view"
echo "$view" | grep -Eq "^NODE +GPU +PID +USER +JOB +GPU-MEM\* +CPU +HOST-MEM +COMMAND" ||
  fail "process panel heading:\n$view"
ok "200x50: process panel with job $first's command"

tm send-keys -t wide s
wait_for "the processes to be sorted by CPU" screen_has wide "GPU-MEM +CPU\* "
ok "s: sorted by CPU"

# j selects the first job of the list (running first, oldest first: $first), c asks, y cancels.
tm send-keys -t wide j c
wait_for "the question" screen_has wide "^Cancel job $first\? y: yes"
tm send-keys -t wide y
wait_for "the answer" screen_has wide "^job $first cancelled"
wait_for "job $first to end" state_is "$first" CANCELLED
ok "j c y: job $first cancelled from top"

tm send-keys -t wide q
expect_clean_exit wide "q at 200x50"
ok "q: exit 0 at 200x50"
