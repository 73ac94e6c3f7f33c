#!/usr/bin/env bash
# The README's tour runs as written (issue #24): every shell command of its "A five-minute tour"
# section, block by block, in order, against a real `gpufleet up` on simulated GPUs, so that
# the README never shows a command that fails. What the test supplies, and nothing else:
# - a working folder whose build/release/apps/gpufleet/gpufleet is the binary under test, for
#   the tour's `export PATH=$PWD/build/release/...`;
# - this server's TCP address in place of `make run`'s 127.0.0.1:7460;
# - a terminal for `gpufleet top` (under script(1)), and the `q` that quits it;
# - time: a command that fails is tried again for a while, as a person reads the output of
#   the last one before typing the next (`logs 1` right after `submit` finds it still pending).
# A command fails the test when it never exits 0, or, for a pipeline (`curl ... | head`, whose
# status is its last command's), when it never prints anything.
source "$(dirname "$0")/lib.sh"
README=${README:-$(dirname "$0")/../../README.md}
[ -f "$README" ] || fail "no README at $README"
need script curl  # script(1) gives gpufleet top a terminal; curl reads the tour's /metrics
start_up
addr=$(banner_url | sed 's|^https*://||')

# tour_commands: the tour's shell commands, one a line on stdout (NUL-separated, as a heredoc
# spans lines): comment and blank lines left out, continued lines ("\") and heredocs joined.
tour_commands() {
  awk '/^## A five-minute tour/ {tour = 1; next}
       tour && /^##/ {exit}
       tour && /^```sh/ {block = 1; next}
       tour && /^```/ {block = 0; next}
       block' "$README" |
  {
    local cur="" heredoc="" line
    while IFS= read -r line; do
      if [ -n "$heredoc" ]; then
        cur+=$'\n'"$line"
        if [ "$line" = "$heredoc" ]; then printf '%s\0' "$cur"; cur=""; heredoc=""; fi
        continue
      fi
      [[ "$line" =~ ^[[:space:]]*(#.*)?$ ]] && continue
      if [[ "$line" == *\\ ]]; then cur+="${line%\\}"; continue; fi
      cur+="$line"
      if [[ "$cur" =~ \<\<-?\'?\"?([A-Za-z_]+) ]]; then heredoc=${BASH_REMATCH[1]}; continue; fi
      printf '%s\0' "$cur"
      cur=""
    done
    [ -z "$cur" ] || fail "README tour: unfinished command at its end: $cur"
  }
}

# run_tour_command CMD: runs CMD in this shell (its exports last), as a person's shell would
# (no errexit, no pipefail), until it succeeds; fails the test after a minute.
run_tour_command() {
  local cmd=${1//127.0.0.1:7460/$addr} deadline=$((SECONDS + 60)) rc out
  case "$cmd" in
    "gpufleet top"*) cmd="printf q | script -qec '${cmd%%#*}' /dev/null" ;;
  esac
  while true; do
    set +e +o pipefail
    eval "$cmd" >"$WORK/command.out" 2>&1 </dev/null  # not in $(...): its exports must last
    rc=$?
    set -e -o pipefail
    out=$(cat "$WORK/command.out")
    printf '$ %s\n%s\n' "$1" "$out" >>"$WORK/tour.out"
    if [ "$rc" = 0 ] && { [[ "${cmd%%#*}" != *"|"* ]] || [ -n "$out" ]; }; then
      return 0
    fi
    [ $SECONDS -lt $deadline ] || fail "README tour: '$1' exits $rc; it printed: $out"
    sleep 0.5
  done
}

mkdir -p "$WORK/tour/build/release/apps/gpufleet"
ln -s "$(readlink -f "$GPUFLEET")" "$WORK/tour/build/release/apps/gpufleet/gpufleet"
cd "$WORK/tour"
count=0
while IFS= read -r -d '' command; do
  run_tour_command "$command"
  count=$((count + 1))
done < <(tour_commands)
[ "$count" -ge 20 ] || fail "README tour: only $count commands found; is the section still '## A five-minute tour'?"
[ "$(command -v gpufleet)" = "$WORK/tour/build/release/apps/gpufleet/gpufleet" ] ||
  fail "the tour's gpufleet is $(command -v gpufleet), not the binary under test"
# What the tour's comments say the commands show.
grep -qx "Submitted job 1" "$WORK/tour.out" || fail "the tour's first job is not job 1: $(head -n 40 "$WORK/tour.out")"
grep -qE "^GPU-[^,]+,GPU-[^,]+$" "$WORK/tour.out" || fail "the tour's 'logs 1' shows no two GPU UUIDs"
[ "$(job_state 2)" = CANCELLED ] || fail "the tour's job 2 is $(job_state 2), not CANCELLED"
grep -Eq "^3 .*PENDING.*behind job 4" "$WORK/tour.out" || fail "the tour's job 3 does not wait behind job 4"
[ "$(job_field 5 name)" = nightly-eval ] && [ "$(job_field 5 gpus)" = 2 ] ||
  fail "the tour's eval.sh job ignored its #GPUFLEET lines: $(gf show 5)"
[ -s nov.html ] || fail "the tour's report --output nov.html wrote nothing"
cat "$WORK/tour.out"
ok "the README's tour: $count commands ran as written"
