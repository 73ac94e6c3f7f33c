#!/bin/sh
# Sweep 16 learning rates, four at a time.
#SBATCH --array=0-15%4
#SBATCH --gpus=1
#SBATCH --time=30
#SBATCH --output=sweep/slurm-%A_%a.out

LR=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" rates.txt)
python sweep.py --lr "$LR"
