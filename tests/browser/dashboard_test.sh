#!/usr/bin/env bash
# The web dashboard in a real headless Chromium (issue #9): a `gpufleet up` on simulated GPUs
# with an admin (root) and a user (gf-e2e-user) token, teams with GPU-hour budgets, and jobs of
# both; then dashboard.test.mjs drives the pages with playwright-core (from the build's npm ci)
# and the system Chromium, and checks their figures against the API and a hand count.
# Screenshots go to $GF_BROWSER_ARTIFACTS.
source "$(dirname "$0")/../e2e/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root to create a second user"; exit $SKIP; }
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || fail "no $CHROMIUM: scripts/bootstrap.sh installs Debian's chromium (make bootstrap)"
need node  # the build's npm ci needs it too
: "${GF_WEB_NODE_MODULES:?set GF_WEB_NODE_MODULES to web/node_modules in the build dir}"
[ -d "$GF_WEB_NODE_MODULES/playwright-core" ] || { echo "skip: no playwright-core in $GF_WEB_NODE_MODULES (built with -DGF_WEB=OFF?)"; exit $SKIP; }
other=gf-e2e-user
id -u "$other" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$other"

# Teams: root's (ops) and the user's (dev) without budgets, and three teams whose GPU-hour
# budgets the first jobs leave under (1 GPU x 1 s of 1 GPU-hour), near (1 GPU x 5 s of 7.2
# GPU-seconds) and over (1 GPU x 4 s of 3.6 GPU-seconds), all spent before root's job starts.
cat >"$WORK/settings.toml" <<TOML
[team.ops]
members = ["root"]
guaranteed_gpus = 4

[team.dev]
members = ["$other"]

[team.under]
gpu_hour_budget = 1

[team.near]
gpu_hour_budget = 0.002

[team.over]
gpu_hour_budget = 0.001
over_budget = "hold"
TOML
start_up --config "$WORK/settings.toml"
url=$(banner_url)
gf token create --user root --role admin --output "$WORK/admin.token" >/dev/null
gf token create --user "$other" --output "$WORK/user.token" >/dev/null

# Root's idle job holds a GPU from the start without using it (a simulated GPU works for a
# process that names it in CUDA_VISIBLE_DEVICES), beside the budget teams' jobs on the other
# three; then root's job keeps 2 of those busy (the heat map shows its owner, the job page its
# charts) and one stays free. The user's job needs 2 and waits (the queue shows why). The
# secret name must never reach the user.
idle_job=$(submit --gpus 1 --name idle-holder --workdir /tmp -- \
  env -u CUDA_VISIBLE_DEVICES -u NVIDIA_VISIBLE_DEVICES sleep 600)
wait_for "root's idle job to run" state_is "$idle_job" RUNNING
budget_jobs=(
  "$(submit --team under --gpus 1 --name under-budget --workdir /tmp -- sleep 1)"
  "$(submit --team near --gpus 1 --name near-budget --workdir /tmp -- sleep 5)"
  "$(submit --team over --gpus 1 --name over-budget --workdir /tmp -- sleep 4)"
)
for job in "${budget_jobs[@]}"; do
  wait_for "job $job (of a budget team) to complete" state_is "$job" COMPLETED
done
root_job=$(submit --gpus 2 --time 1h --name root-secret-training --workdir /tmp -- sleep 600)
wait_for "root's job to run" state_is "$root_job" RUNNING
user_job=$(env -u GPUFLEET_SOCKET "$GPUFLEET" --server "$url" --token-file "$WORK/user.token" \
  submit --json --gpus 2 --name user-job --workdir /tmp -- sleep 600 | jq -r .id)
[ -n "$user_job" ] && [ "$user_job" != null ] || fail "the user's submit"
wait_for "the user's job to wait with a reason" sh -c "$GPUFLEET show --json $user_job | jq -e '.state == \"PENDING\" and .reason != \"\"'"

# A queue for the queue page (dashboard.test.mjs): with 1 GPU free, root's low-class job (first
# submitted, last in the order: class comes first), an array of three tasks and a 3-GPU job
# wait beside the user's job: 6 pending. Root's job's 1 h limit gives the head an estimated start.
queue_low=$(submit --gpus 2 --priority low --name queue-low --workdir /tmp -- sleep 600)
queue_array=$(submit --gpus 2 --array 0-2 --name queue-array --workdir /tmp -- sleep 600)
queue_big=$(submit --gpus 3 --name queue-big --workdir /tmp -- sleep 600)
wait_for "6 pending jobs, each with its place in the scheduling order" sh -c \
  "$GPUFLEET queue --json | jq -e '[.jobs[] | select(.state == \"PENDING\")] |
     length == 6 and all(.queue_position != null)'"

# The report counts whole minutes (a minute is rolled up when the next one's first sample comes):
# wait for minutes with a GPU free, one held busy and one held idle, so that the shares the page
# once mixed up differ (the utilisation while allocated and of all GPU time; the idle share of
# all GPU time and of the allocated time) and a figure under another's label shows
# (dashboard.test.mjs). Usually the first minute after root's job starts; a second at most.
WAIT_FOR_SECONDS=150 wait_for "report minutes free, busy and idle while allocated" sh -c \
  "$GPUFLEET report --format json | jq -e '.cluster.figures | 0 < .minutes_idle_allocated and
     .minutes_idle_allocated < .minutes_allocated and .minutes_allocated < .minutes_observed and
     .used_pct - .util_pct >= 0.2 and
     (.idle_pct - 100 * .minutes_idle_allocated / .minutes_allocated | fabs) >= 0.2'"

gf report --period "$(date -u +%Y-%m)" --format html --output "$WORK/report.html" || fail "report --format html"

artifacts=${GF_BROWSER_ARTIFACTS:-$WORK/artifacts}
rm -rf "$artifacts"; mkdir -p "$artifacts"
GF_URL=$url GF_ADMIN_TOKEN=$(cat "$WORK/admin.token") GF_USER_TOKEN=$(cat "$WORK/user.token") \
  GF_ROOT_JOB=$root_job GF_USER_JOB=$user_job GF_IDLE_JOB=$idle_job GF_SECRET=root-secret-training \
  GF_QUEUE_JOBS="$queue_low $queue_array $queue_big" \
  GF_BUDGET_JOBS="${budget_jobs[*]}" GF_SETTINGS=$WORK/settings.toml \
  GF_REPORT_HTML=$WORK/report.html GF_ARTIFACTS=$artifacts CHROMIUM=$CHROMIUM \
  timeout 300 node "$(dirname "$0")/dashboard.test.mjs" || fail "the browser tests (screenshots in $artifacts)"
ok "dashboard pages, live queue, visibility and the HTML report in Chromium (screenshots in $artifacts)"
