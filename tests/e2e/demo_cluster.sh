# A small scripted cluster for what shows the figures of a running cluster rather than testing
# one rule: the report's PDF (report_pdf_test.sh) and the dashboard's screenshots
# (scripts/dashboard-screenshots.sh). Sourced after lib.sh.
#
# demo_cluster [UP OPTIONS...]: `gpufleet up` on 4 simulated H100s with two teams, vision (the
# caller's) and nlp (whose jobs the caller, as root, charges to it: a user is in one team), and
# their jobs: vision's training keeps 2 GPUs busy; nlp's notebook holds 1 and never uses it
# (a simulated GPU is busy only for a process that names it in CUDA_VISIBLE_DEVICES: the waste
# the report lists); nlp's eval keeps the 4th busy. Behind them wait a 3-task sweep of vision's
# and nlp's low-class 4-GPU fine-tune. No job has ended: the run-time predictions would learn
# from it, and the queue's estimated starts come from the time limits instead. Sets DEMO_TRAIN, DEMO_NOTEBOOK, DEMO_EVAL (job ids).
demo_cluster() {
  local me
  me=$(id -un)
  cat >"$WORK/demo.toml" <<TOML
[team.vision]
members = ["$me"]
guaranteed_gpus = 2
gpu_hour_budget = 500

[team.nlp]
guaranteed_gpus = 2
gpu_hour_budget = 100
TOML
  start_up --config "$WORK/demo.toml" "$@"
  DEMO_TRAIN=$(submit --team vision --gpus 2 --time 4h --name resnet50-train --workdir /tmp -- sleep 3600)
  DEMO_NOTEBOOK=$(submit --team nlp --gpus 1 --name notebook --workdir /tmp -- \
    env -u CUDA_VISIBLE_DEVICES -u NVIDIA_VISIBLE_DEVICES sleep 3600)
  DEMO_EVAL=$(submit --team nlp --gpus 1 --time 1h --name bert-eval --workdir /tmp -- sleep 3600)
  local job
  for job in "$DEMO_TRAIN" "$DEMO_NOTEBOOK" "$DEMO_EVAL"; do
    wait_for "demo job $job to run" state_is "$job" RUNNING
  done
  submit --team vision --gpus 2 --array 0-2 --name lr-sweep --workdir /tmp -- sleep 600 >/dev/null
  submit --team nlp --gpus 4 --priority low --name llm-finetune --workdir /tmp -- sleep 600 >/dev/null
}

# demo_report_ready: whether this month's report has closed GPU-minutes of every demo job (the
# first rolls up when the next minute's first sample comes): both teams' GPU-hours and the
# notebook in the waste list.
demo_report_ready() {
  gf report --format json | jq -e --argjson notebook "$DEMO_NOTEBOOK" '
    ([.teams[] | select(.usage.minutes_allocated > 0)] | length) >= 2 and
    any(.waste.jobs[]; .job == $notebook)' >/dev/null
}
