#!/usr/bin/env bash
# The web dashboard in a real headless Chromium (issue #9): a `gpufleet up` on simulated GPUs
# with an admin (root) and a user (gf-e2e-user) token, and jobs of both; then dashboard.test.mjs
# drives the pages with playwright-core (from the build's npm ci) and the system Chromium.
# Screenshots go to $GF_BROWSER_ARTIFACTS.
source "$(dirname "$0")/../e2e/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root to create a second user"; exit $SKIP; }
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "skip: no $CHROMIUM (scripts/bootstrap.sh installs Debian's chromium)"; exit $SKIP; }
command -v node >/dev/null || { echo "skip: no node"; exit $SKIP; }
: "${GF_WEB_NODE_MODULES:?set GF_WEB_NODE_MODULES to web/node_modules in the build dir}"
[ -d "$GF_WEB_NODE_MODULES/playwright-core" ] || { echo "skip: no playwright-core in $GF_WEB_NODE_MODULES (built with -DGF_WEB=OFF?)"; exit $SKIP; }
other=gf-e2e-user
id -u "$other" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$other"

start_up
url=$(banner_url)
gf token create --user root --role admin --output "$WORK/admin.token" >/dev/null
gf token create --user "$other" --output "$WORK/user.token" >/dev/null

# Root's job holds every GPU (the heat map shows its owner, the job page its charts); the
# user's job waits behind it (the queue shows why). The secret name must never reach the user.
root_job=$(submit --gpus 4 --name root-secret-training --workdir /tmp -- sleep 600)
wait_for "root's job to run" state_is "$root_job" RUNNING
user_job=$(env -u GPUFLEET_SOCKET "$GPUFLEET" --server "$url" --token-file "$WORK/user.token" \
  submit --json --gpus 1 --name user-job --workdir /tmp -- sleep 600 | jq -r .id)
[ -n "$user_job" ] && [ "$user_job" != null ] || fail "the user's submit"
wait_for "the user's job to wait with a reason" sh -c "$GPUFLEET show --json $user_job | jq -e '.state == \"PENDING\" and .reason != \"\"'"

gf report --period "$(date -u +%Y-%m)" --format html --output "$WORK/report.html" || fail "report --format html"

artifacts=${GF_BROWSER_ARTIFACTS:-$WORK/artifacts}
rm -rf "$artifacts"; mkdir -p "$artifacts"
GF_URL=$url GF_ADMIN_TOKEN=$(cat "$WORK/admin.token") GF_USER_TOKEN=$(cat "$WORK/user.token") \
  GF_ROOT_JOB=$root_job GF_USER_JOB=$user_job GF_SECRET=root-secret-training \
  GF_REPORT_HTML=$WORK/report.html GF_ARTIFACTS=$artifacts CHROMIUM=$CHROMIUM \
  timeout 150 node "$(dirname "$0")/dashboard.test.mjs" || fail "the browser tests (screenshots in $artifacts)"
ok "dashboard pages, live queue, visibility and the HTML report in Chromium (screenshots in $artifacts)"
