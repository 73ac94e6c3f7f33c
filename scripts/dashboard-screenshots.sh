#!/usr/bin/env bash
# Regenerates the dashboard's screenshots in docs/images/dashboard/ (docs/dashboard.md shows
# them): `gpufleet up` on the demo cluster of the report's tests (tests/e2e/demo_cluster.sh: 4
# simulated GPUs, two teams, busy and idle jobs, a queue), once its first GPU-minutes are in the
# report (a minute or two), then each page at 1400×900 in headless Chromium
# (tests/browser/screenshots.mjs), quantised by pngquant to stay small in git.
#
#   scripts/dashboard-screenshots.sh [BUILD_DIR]     (`make screenshots`; default build/debug)
#
# Needs a build with the dashboard (GF_WEB, the default), root (it makes an admin token on the
# server's socket, as the browser tests do), Chromium (or $CHROMIUM), node and pngquant
# (scripts/bootstrap.sh installs them). Fails, keeping the old images, when a page shows an
# error, comes out nearly blank, or any image is over 150 KB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build/debug}" && pwd)
export GPUFLEET=${GPUFLEET:-$build/apps/gpufleet/gpufleet}
source "$root/tests/e2e/lib.sh"
source "$root/tests/e2e/demo_cluster.sh"
need jq node pngquant python3
modules=$build/web/node_modules
[ -d "$modules/playwright-core" ] || fail "no playwright-core in $modules: build with -DGF_WEB=ON (the default)"
[ "$(id -u)" = 0 ] || fail "run as root: the admin token is made on the server's socket"
out=$root/docs/images/dashboard
kMaxBytes=$((150 * 1024))

demo_cluster
url=$(banner_url)
gf token create --user "$(id -un)" --role admin --output "$WORK/admin.token" >/dev/null
WAIT_FOR_SECONDS=150 wait_for "the demo cluster's first minutes in the report" demo_report_ready

mkdir -p "$WORK/shots"
GF_URL=$url GF_TOKEN=$(cat "$WORK/admin.token") GF_JOB=$DEMO_TRAIN GF_WEB_NODE_MODULES=$modules \
  GF_OUT=$WORK/shots timeout 300 node "$root/tests/browser/screenshots.mjs" \
  || fail "the screenshots (tests/browser/screenshots.mjs)"

# Quantised to a palette (the pages are flat colours: text stays sharp), then checked before
# any replaces its old image: the viewport's size, figures on it, and the size limit.
mkdir -p "$WORK/small"
for shot in "$WORK"/shots/*.png; do
  name=$(basename "$shot")
  pngquant --quality 70-95 --speed 1 --strip --force --output "$WORK/small/$name" "$shot" \
    || fail "pngquant $name"
  # Below the header bar (36 px), a page of figures has tens of thousands of pixels of text,
  # cells and charts (the sparsest, quota, about 29,000); a page with a line of text a few
  # thousand.
  stats=$(python3 "$root/tests/e2e/png_pixels.py" "$WORK/small/$name" --from-row 40)
  jq -e '.width == 1400 and .height == 900 and .non_white >= 15000' <<<"$stats" >/dev/null \
    || fail "$name looks empty or the wrong size: $stats"
  bytes=$(stat -c %s "$WORK/small/$name")
  [ "$bytes" -le "$kMaxBytes" ] || fail "$name is $bytes bytes, over $kMaxBytes"
  ok "$name: $bytes bytes, $(jq .non_white <<<"$stats") pixels not white under the header"
done
mkdir -p "$out"
cp "$WORK"/small/*.png "$out/"
ok "screenshots in ${out#"$root"/}"
