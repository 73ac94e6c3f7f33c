#!/usr/bin/env bash
# Bad input: a clear error naming the field and the fix, a non-zero exit, nothing stored.
source "$(dirname "$0")/lib.sh"
start_up

expect_error() {  # expect_error PATTERN ARGS...
  local pattern=$1; shift
  if gf "$@" >"$WORK/out" 2>&1; then fail "accepted: gpufleet $*"; fi
  grep -qE -- "$pattern" "$WORK/out" || fail "gpufleet $*: message '$(cat "$WORK/out")' lacks '$pattern'"
  echo "  rejected gpufleet $*: $(head -n1 "$WORK/out")"
}
expect_error "--gpus.*whole number" submit --gpus abc -- true
expect_error "--gpus.*whole number" submit --gpus -1 -- true
expect_error "gpus.*largest node has 4" submit --gpus 99 -- true
expect_error "gpu-type.*H100-80GB" submit --gpu-type V100 -- true
expect_error "--time.*use e.g." submit --time soon -- true
expect_error "priority: no class .urgent.; the classes are high, normal, low" submit --priority urgent -- true
expect_error "priority" submit --priority "Bad Name" -- true
expect_error "--env" submit --env NOEQUALS -- true
expect_error "command" submit --gpus 1
expect_error "--gpuz" submit --gpuz 1 -- true
expect_error "not a job id" cancel abc
expect_error "not found" cancel 999
# Issue #24: an unknown command says so and names the closest one, instead of "A subcommand is
# required".
expect_error "'hodl' is not a gpufleet command; the closest is 'hold'.*gpufleet --help" hodl 21
expect_error "not found" hold 21
expect_error "'sumbit' is not a gpufleet command; the closest is 'submit'" sumbit -- true
[ "$(gf queue --all --json | jq '.jobs | length')" = 0 ] || fail "a rejected submission was stored"
ok "bad input rejected with named fields; nothing stored"

# Issue #20: a bad global flag stops gpufleet before the command acts; it used to submit the job
# and then exit 2, so a retrying script submitted it twice.
rc=0
gf --log-level bogus submit -- true >"$WORK/out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad --log-level: exit $rc, $(cat "$WORK/out")"
grep -q -- "--log-level: 'bogus' is not a level" "$WORK/out" || fail "message: $(cat "$WORK/out")"
rc=0
gf queue -- true >"$WORK/out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "'--' after queue: exit $rc, $(cat "$WORK/out")"
[ "$(gf queue --all --json | jq '.jobs | length')" = 0 ] || fail "submitted despite a bad flag"
ok "a bad global flag exits 2 before the command runs"

# Issue #20: the socket is 0666, and a body nested 100,000 deep (200 KB, under the 1 MiB limit)
# overflowed the root daemon's stack. It is refused naming the limit, and the daemon stays up.
if command -v curl >/dev/null; then
  { printf '{"command":["true"],"workdir":"/","env":'
    head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; printf '}'
  } >"$WORK/deep.json"
  post() {  # post CURL_ARGS...: POST /api/v1/jobs on the socket; prints the HTTP status
    curl -s -o "$WORK/out" -w '%{http_code}' --unix-socket "$GPUFLEET_SOCKET" "$@" \
      http://gpufleet/api/v1/jobs
  }
  code=$(post -H 'Content-Type: application/json' --data-binary @"$WORK/deep.json")
  [ "$code" = 400 ] || fail "deep body: HTTP $code, $(head -c 300 "$WORK/out")"
  grep -q "nested deeper than 64 levels (the limit); flatten it" "$WORK/out" ||
    fail "deep body: $(cat "$WORK/out")"
  gf nodes >/dev/null || fail "gpufleet up died after a deep body"
  code=$(post -d '{"command":["true"]}')  # curl -d labels it a form
  [ "$code" = 415 ] || fail "form-typed body: HTTP $code, $(cat "$WORK/out")"
  [ "$(gf queue --all --json | jq '.jobs | length')" = 0 ] || fail "a refused body was stored"
  ok "a 100,000-deep body is refused naming the limit, the daemon lives on; a form body is 415"
fi

GPUFLEET_SOCKET=$WORK/nothing.sock
if gf queue 2>"$WORK/err"; then fail "queue without a server succeeded"; fi
grep -q "cannot reach gpufleet" "$WORK/err" || fail "unreachable message: $(cat "$WORK/err")"
ok "unreachable server: $(cat "$WORK/err")"
