#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a fixed time each (`make fuzz`, and CI after
# `make test`). Builds the `fuzz` preset (clang) first.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      default 60 s, every target
#
# Inputs may be as large as the API's body limit (1 MiB): the deep-nesting crash of issue #20
# was 150 KB, far past libFuzzer's default max_len of 4096, which is why the short runs before
# it never met it. Two targets run at a time (the machines have 2 cores).
#
# Seeds: tests/fuzz/corpus/<name> and tests/fuzz/regressions/<name> (read only). What a run
# finds interesting goes to build/fuzz/runs/<name>/ (kept between runs, out of the tree).
# A crash, leak or timeout is copied into tests/fuzz/regressions/<name>/ under libFuzzer's
# name (crash-<sha1>, leak-…, timeout-…) so that the fix's commit keeps it, and the script
# fails naming each. Prints one line per target: runs, coverage, result.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
max_len=$((1024 * 1024))  # the API's request body limit (src/api/api_server.h)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

build=build/fuzz/tests/fuzz
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(find "$build" -maxdepth 1 -name '*_fuzz' -type f -executable \
    -printf '%f\n' | sed 's/_fuzz$//' | sort)
fi
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz: no targets built in $build" >&2
  exit 1
fi

run_one() {
  local name="$1" seconds="$2" max_len="$3" build="$4"
  local work="build/fuzz/runs/$name" artifacts="build/fuzz/artifacts/$name/"
  mkdir -p "$work" "$artifacts"
  local log="build/fuzz/runs/$name.log"
  local rc=0
  # -timeout: one input taking over 10 s is a finding (a quadratic path on a large body).
  "$build/${name}_fuzz" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts" \
    "$work" "tests/fuzz/corpus/$name" "tests/fuzz/regressions/$name" >"$log" 2>&1 || rc=$?
  local runs cov
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $name FAILED after ${runs:-?} runs ($cov); log: $log"
    for f in "$artifacts"*; do
      [ -f "$f" ] || continue
      cp "$f" "tests/fuzz/regressions/$name/"
      echo "fuzz: $name kept tests/fuzz/regressions/$name/$(basename "$f")"
    done
    return 1
  fi
  echo "fuzz: $name ok, ${runs:-?} runs in ${seconds} s ($cov)"
}
export -f run_one

status=0
printf '%s\n' "${targets[@]}" |
  xargs -P 2 -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$max_len" "$build" || status=$?
if [ "$status" -ne 0 ]; then
  echo "fuzz: a target failed; its input is kept in tests/fuzz/regressions/ (see above)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, no finding"
