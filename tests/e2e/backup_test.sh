#!/usr/bin/env bash
# `gpufleet backup` and `gpufleet restore` on a `gpufleet up` of the test's own data dir
# (docs/install.md#backup-and-restore): a backup while it runs, restore refused beside it, the
# backup's jobs back after a restore (the replaced database kept), and what each says about a
# backup it cannot take or put back. package_test.sh does the same on the installed package.
source "$(dirname "$0")/lib.sh"
stop_up() { kill -TERM "$UP_PID"; wait "$UP_PID" 2>/dev/null || true; UP_PID=""; }
start_up

kept=$(submit --gpus 1 -- sh -c 'echo kept')
wait_for "job $kept to complete" state_is "$kept" COMPLETED
out=$(gf backup --data-dir "$WORK/data" --output "$WORK/backup.db") || fail "backup: $out"
grep -q "1 job, " <<<"$out" || fail "backup says: $out"
[ "$(stat -c %a "$WORK/backup.db")" = 600 ] || fail "the backup is not private"
late=$(submit --gpus 1 -- true)
wait_for "job $late to complete" state_is "$late" COMPLETED
ok "backup while running: $out"

if out=$(gf restore --data-dir "$WORK/data" --input "$WORK/backup.db" 2>&1); then
  fail "restore ran beside a running gpufleet up"
fi
grep -q "a gpufleet daemon is running on $WORK/data; stop it first" <<<"$out" || fail "restore: $out"
stop_up
out=$(gf restore --data-dir "$WORK/data" --input "$WORK/backup.db") || fail "restore: $out"
ls "$WORK"/data/state.db.replaced-* >/dev/null || fail "the replaced database is gone"
start_up
state_is "$kept" COMPLETED || fail "job $kept lost by the restore"
if gf show "$late" >/dev/null 2>&1; then fail "job $late, after the backup, is back"; fi
ok "restored: $out"

# What cannot be backed up or restored, and why.
out=$(gf backup --data-dir "$WORK/data" --db postgresql://gf@db.invalid/gf \
  --output "$WORK/pg.db" 2>&1) && fail "backup of a PostgreSQL store"
grep -q "the store is PostgreSQL.*pg_dump" <<<"$out" || fail "backup of PostgreSQL: $out"
out=$(gf backup --data-dir "$WORK/data" --output "$WORK/data/state.db" 2>&1) && fail "backup over the database"
grep -q "is the database itself" <<<"$out" || fail "backup over the database: $out"
echo "a shopping list" >"$WORK/list.db"
out=$(gf restore --data-dir "$WORK/data" --input "$WORK/list.db" 2>&1) && fail "restore of a text file"
grep -q "list.db" <<<"$out" || fail "restore of a text file: $out"
ok "refusals name the reason"
