#!/bin/bash
# A Slurm user's habit: mail on everything, including the start gpufleet does not notify.
#SBATCH --job-name=sweep
#SBATCH --gres=gpu:1
#SBATCH --mail-type=BEGIN,ALL,TIME_LIMIT_80
#SBATCH --mail-user=bob@example.org
python sweep.py
