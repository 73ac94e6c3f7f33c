#!/usr/bin/env bash
# The settings file: `gpufleet up --config FILE` fails fast on a bad file, naming file, line and
# key, before it takes the data dir; a good file's [up] keys and policy apply, flags win.
source "$(dirname "$0")/lib.sh"

# expect_bad_config PATTERN TOML: up must refuse FILE at once, with PATTERN in its message.
expect_bad_config() {
  local pattern=$1 text=$2
  printf '%s\n' "$text" >"$WORK/bad.toml"
  if timeout 20 "$GPUFLEET" up --config "$WORK/bad.toml" --gpus sim:1xH100-80GB \
      --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" --port -1 >"$WORK/out" 2>&1; then
    fail "up accepted: $text"
  fi
  grep -qE -- "$pattern" "$WORK/out" || fail "message '$(cat "$WORK/out")' lacks '$pattern'"
  [ ! -e "$WORK/data" ] || fail "up created its data dir before checking the settings file"
  echo "  refused: $(head -n1 "$WORK/out")"
}
expect_bad_config "bad.toml:3: unknown key 'max_gpu' in \[team.ml\]; known keys: " \
  $'[team.ml]\nguaranteed_gpus = 2\nmax_gpu = 4'
expect_bad_config "bad.toml:3: \[team.ml\] max_gpus: 1 is below guaranteed_gpus 2" \
  $'[team.ml]\nguaranteed_gpus = 2\nmax_gpus = 1'
expect_bad_config "bad.toml:2: \[class.high\] preempts: no class 'urgent'" \
  $'[class.high]\npreempts = ["urgent"]'
expect_bad_config "bad.toml:1: \[class.gold\] rank: missing; a file that defines its own classes" \
  $'[class.gold]\npreempts = []'
expect_bad_config "bad.toml:2: \[scheduler\] min_run_time: " $'[scheduler]\nmin_run_time = "soon"'
expect_bad_config "bad.toml:2: \[up\] sample_interval: '2h' is not a duration between 1s and 1h" \
  $'[up]\nsample_interval = "2h"'
expect_bad_config "bad.toml:2: \[up\] kill_grace: 7200s is above the most, 3600s" \
  $'[up]\nkill_grace = "2h"'
expect_bad_config "bad.toml: not valid TOML" $'[up]\nport ='
# Issue #20: a deep file crashed toml11 (a segfault); "" fell back to the stock data dir.
expect_bad_config "bad.toml:1: nested more than 32 levels deep" "x = $(printf '[%.0s' {1..100000})"
expect_bad_config "bad.toml:2: \[up\] data_dir: an empty string" $'[up]\ndata_dir = ""'
mkdir "$WORK/conf.d"
expect_bad_config_flags() {  # PATTERN FLAGS...: up must refuse the flags at once
  local pattern=$1; shift
  if timeout 20 "$GPUFLEET" up --gpus sim:1xH100-80GB --listen-socket "$GPUFLEET_SOCKET" \
      --port -1 "$@" >"$WORK/out" 2>&1; then
    fail "up accepted: $*"
  fi
  grep -qE -- "$pattern" "$WORK/out" || fail "message '$(cat "$WORK/out")' lacks '$pattern'"
  [ ! -e "$WORK/data" ] || fail "up created its data dir before checking $*"
  echo "  refused: $(head -n1 "$WORK/out")"
}
expect_bad_config_flags "config file $WORK/conf.d is a directory" \
  --config "$WORK/conf.d" --data-dir "$WORK/data"
expect_bad_config_flags "--data-dir: an empty value" --data-dir ""
if "$GPUFLEET" up --config "$WORK/none.toml" >"$WORK/out" 2>&1; then
  fail "missing file accepted"
fi
grep -q "none.toml does not exist" "$WORK/out" || fail "missing file: $(cat "$WORK/out")"
ok "bad settings files refused with file, line and key"

# A good file: its [up] keys apply except where a flag is given (--gpus here), and its policy
# reaches the scheduler (high priority is closed to everyone but 'nobody-else').
cat >"$WORK/good.toml" <<TOML
[up]
gpus = "sim:1xH100-80GB"
data_dir = "$WORK/data"
listen_socket = "$GPUFLEET_SOCKET"
port = -1
node_name = "from-file"
[scheduler]
default_class = "standard"
# A class of its own: the file defines every class (no stock normal or low).
[class.high]
rank = 0
allowed_users = ["nobody-else"]
[class.standard]
rank = 1
[class.batch]
rank = 2
TOML
"$GPUFLEET" up --config "$WORK/good.toml" --gpus sim:3xH100-80GB >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" "$GPUFLEET" nodes
grep -q "settings:   $WORK/good.toml" "$WORK/up.log" || fail "banner does not name the file"
gf nodes | grep -q from-file || fail "node_name from the file not used: $(gf nodes)"
[ "$(gf gpus --json | jq '.gpus | length')" = 3 ] || fail "--gpus flag did not win over the file"
job=$(submit --gpus 1 --priority high -- true)
wait_for "class rule from the file" sh -c \
  "$GPUFLEET show --json $job | jq -e '.reason | test(\"may not use priority class high\")'"
plain=$(submit --gpus 0 -- true)
[ "$(job_field "$plain" priority)" = standard ] ||
  fail "default_class not applied: $(gf show --json "$plain")"
if out=$(gf submit --priority normal -- true 2>&1); then fail "stock class accepted: $out"; fi
grep -qF "priority: no class 'normal'; the classes are high, standard, batch" <<<"$out" ||
  fail "unknown class: $out"
ok "settings file applied: node name, policy, own classes and default class; --gpus flag won"
