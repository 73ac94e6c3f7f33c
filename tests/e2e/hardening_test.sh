#!/usr/bin/env bash
# Issue #20's reproductions that need a whole daemon, each against a real `gpufleet up`: TCP
# clients without a token cannot take the watch slots root's socket needs, and a job name
# carrying terminal escapes reaches nobody's terminal raw. (The deep JSON body is in
# bad_input_test.sh; the authorization table is walked by tests/integration.)
source "$(dirname "$0")/lib.sh"
need curl
start_up
url=$(banner_url)

# 1. Anonymous watches over TCP: 40 from one address (more than its share of 16), held open.
pids=()
for i in $(seq 40); do
  curl -s -N --max-time 60 -o "$WORK/w$i" -w '%{http_code}\n' "$url/api/v1/gpus?watch=1" \
    >"$WORK/code$i" 2>/dev/null &
  pids+=($!)
done
refused() { [ "$(cat "$WORK"/code* 2>/dev/null | grep -c '^429$')" -ge 24 ]; }
wait_for "24 of 40 anonymous watches refused with 429" refused
# Root's watch on the Unix socket still streams GPU events.
curl -s -N --max-time 3 --unix-socket "$GPUFLEET_SOCKET" \
  "http://localhost/api/v1/gpus?watch=1" >"$WORK/root-watch" 2>/dev/null || true
grep -q '^event: gpus' "$WORK/root-watch" || fail "root's watch got: $(head -c 300 "$WORK/root-watch")"
grep -h 'too many open watches' "$WORK"/w* >"$WORK/refusals" || true
grep -q 'watches_per_client' "$WORK/refusals" ||
  fail "the 429 does not name the setting: $(head -c 300 "$WORK/refusals")"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
gf nodes >/dev/null || fail "the daemon stopped answering"
ok "40 anonymous TCP watches: at most 16 held, the rest 429 naming watches_per_client; root's socket watch streams"

# 2. A command whose argv[0] holds ESC, BEL and an OSC sequence (sets a terminal's title).
evil=$'\e]0;pwned\a\e[2Jx'
id=$(submit -- "$evil")
wait_for "job $id to end" sh -c "$GPUFLEET show --json $id | jq -e '.state == \"FAILED\"'"
for cmd in "queue --all" "show $id" "explain $id"; do
  gf $cmd >"$WORK/out" 2>&1 || true
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$WORK/out"; then
    fail "gpufleet $cmd printed a raw control character: $(od -c "$WORK/out" | head -5)"
  fi
done
gf show "$id" | grep -qF '\x1b]0;pwned\x07' || fail "show does not name the escaped command: $(gf show "$id")"
LC_ALL=C grep -q $'\e' "$WORK/up.log" && fail "the daemon's log holds a raw ESC"
if gf submit --name $'a\eb' -- true >"$WORK/out" 2>&1; then fail "a name with ESC was accepted"; fi
grep -q "name:" "$WORK/out" || fail "the refusal does not name the field: $(cat "$WORK/out")"
ok "escapes in argv[0] reach queue, show, explain and the log as \\x1b text; --name with ESC refused"
