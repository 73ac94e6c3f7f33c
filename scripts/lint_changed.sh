#!/usr/bin/env bash
# clang-tidy (the repo's .clang-tidy, every finding an error, as `make lint`) over the C++
# files a submission changed: the .cpp files under src/, apps/ and tests/fakenvml/ that differ
# between a base commit and HEAD (`make lint-changed`; CI runs it after `make test`).
#
#   scripts/lint_changed.sh [BASE]      default: the commit in .ci/lint-base
#
# .ci/lint-base holds the commit up to which the tree was last linted; move it forward (to
# the commit that was linted) when a whole-tree `make lint` has passed. Headers are checked
# through the .cpp files that include them (HeaderFilterRegex). Needs the debug build's
# build/debug/compile_commands.json (`cmake --preset debug`). A .cpp that is deleted, or
# new but not in the build (no compile command), is skipped and named.
set -euo pipefail
cd "$(dirname "$0")/.."

base="${1:-}"
if [ -z "$base" ]; then
  if [ ! -f .ci/lint-base ]; then
    echo "lint-changed: no base commit: give LINT_BASE=<commit> or write one in .ci/lint-base" >&2
    exit 2
  fi
  base="$(tr -d '[:space:]' < .ci/lint-base)"
fi
if ! git rev-parse --verify --quiet "${base}^{commit}" > /dev/null; then
  echo "lint-changed: base '${base}' is not a commit of this repository" >&2
  exit 2
fi
db=build/debug/compile_commands.json
if [ ! -f "$db" ]; then
  echo "lint-changed: $db is missing; run \`cmake --preset debug\` (or \`make build\`) first" >&2
  exit 2
fi

clang_tidy="${CLANG_TIDY:-clang-tidy}"
jobs="${JOBS:-$(nproc)}"

# Added, copied, modified or renamed since the merge base: what this branch wrote.
mapfile -t changed < <(git diff --name-only --diff-filter=ACMR "$(git merge-base "$base" HEAD)" HEAD \
  -- 'src/*.cpp' 'apps/*.cpp' 'tests/fakenvml/*.cpp' | sort)
files=()
for f in "${changed[@]}"; do
  if grep -q "\"file\": \"$(pwd)/$f\"" "$db" || grep -q "\"file\": \"$f\"" "$db"; then
    files+=("$f")
  else
    echo "lint-changed: skipping $f (not in $db)"
  fi
done
if [ ${#files[@]} -eq 0 ]; then
  echo "lint-changed: no C++ file changed since $(git rev-parse --short "$base")"
  exit 0
fi
echo "lint-changed: ${#files[@]} file(s) changed since $(git rev-parse --short "$base")"
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 1 "$clang_tidy" -p build/debug --quiet
echo "lint-changed: clean"
