#!/usr/bin/env bash
# Estimated starts and predictions (issue #22): a start planned from a time limit says so and is
# one time; one planned from a predicted run time says so and is a range (queue, show --json,
# explain); explain shows a prediction's basis and its error so far.
source "$(dirname "$0")/lib.sh"
start_up

# Nothing has ended yet: no prediction, so a start can only come from a time limit.
release0=$WORK/release0
blocker0=$(submit --gpus 4 --time 10m -- sh -c "while [ ! -e $release0 ]; do sleep 0.05; done")
wait_for "blocker to run" state_is "$blocker0" RUNNING
waiter0=$(submit --gpus 4 -- true)
wait_for "a reservation" sh -c "$GPUFLEET show --json $waiter0 | jq -e '.start_estimate != null'"
gf show --json "$waiter0" |
  jq -e '.start_estimate.basis == "time_limits"
         and .start_estimate.earliest_ms == .start_estimate.latest_ms
         and .start_estimate.latest_ms == .estimated_start_ms
         and (.reason | endswith("(GPUs reserved; by time limits)"))' >/dev/null ||
  fail "limits: $(gf show --json "$waiter0")"
queue=$(gf queue)
echo "$queue"
grep -E "^$waiter0 .* in (9m[0-9]+s|10m) \(limits\) " <<<"$queue" >/dev/null ||
  fail "queue does not say the start of $waiter0 comes from limits"
ok "a start from a time limit is one time, and says so"
gf cancel "$waiter0" "$blocker0" >/dev/null  # cancelled runs teach the predictor nothing

# Two runs of "warm" on 4 GPUs end: the predictor knows them.
for _ in 1 2; do
  warm=$(submit --name warm --gpus 4 -- sleep 1)
  wait_for "warm run to end" state_is "$warm" COMPLETED
done
release=$WORK/release
blocker=$(submit --name warm --gpus 4 -- sh -c "while [ ! -e $release ]; do sleep 0.05; done")
wait_for "blocker to run" state_is "$blocker" RUNNING
waiter=$(submit --gpus 4 -- true)
wait_for "a reservation" sh -c "$GPUFLEET show --json $waiter | jq -e '.start_estimate.basis == \"predictions\"'"
gf show --json "$waiter" |
  jq -e '.start_estimate.earliest_ms <= .start_estimate.latest_ms
         and .start_estimate.latest_ms == .estimated_start_ms
         and (.reason | test("expected to start (between|at) .* \\(GPUs reserved; by predicted run times\\)$"))
         and .prediction.error.runs == 1 and .prediction.error.median_relative >= 0' >/dev/null ||
  fail "predictions: $(gf show --json "$waiter")"
queue=$(gf queue)
echo "$queue"
# The blocker may have outlived its estimate (seconds) by the time queue prints: "now" is honest.
grep -E "^$waiter .* (now|within [0-9hms]+|in [0-9hms-]+) \(predicted\) " <<<"$queue" >/dev/null ||
  fail "queue does not say the start of $waiter comes from predictions"
text=$(gf explain "$waiter")
echo "$text"
for want in "estimated start " ", by predicted run times" \
            "predicted run   " "runs with 4 GPUs" \
            "prediction error off by "; do
  grep -qF -- "$want" <<<"$text" || fail "explain $waiter lacks: $want"
done
grep -E "prediction error off by [0-9]+% \(median over the last run predicted\)" <<<"$text" >/dev/null ||
  fail "explain $waiter: no error so far"
ok "a start from predictions is a range and says so; explain shows the prediction's error"
touch "$release"
wait_for "waiter to end" state_is "$waiter" COMPLETED
