#!/usr/bin/env bash
# `make run`: start gpufleet up in the foreground on this machine.
# Real GPUs when an NVIDIA driver is installed; otherwise simulated ones, and it says so.
set -euo pipefail
bin=${1:?usage: run.sh PATH/TO/gpufleet}
args=()
if [ -n "${GPUFLEET_GPUS:-}" ]; then
  args+=(--gpus "$GPUFLEET_GPUS")
elif ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
  echo "make run: NVIDIA driver found: using this machine's GPUs"
else
  echo "make run: no NVIDIA driver on this machine (libnvidia-ml.so.1 not found):"
  echo "          starting on 4 simulated H100 GPUs (--gpus sim:4xH100-80GB)."
  echo "          Set GPUFLEET_GPUS=... to choose, e.g. GPUFLEET_GPUS=sim:8xA100-40GB make run"
  args+=(--gpus sim:4xH100-80GB)
fi
echo "make run: in another terminal: export PATH=$(cd "$(dirname "$bin")" && pwd):\$PATH"
exec "$bin" up "${args[@]}"
