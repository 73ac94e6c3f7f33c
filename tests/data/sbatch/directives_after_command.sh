#!/bin/bash
#SBATCH --time=00:20:00
echo "starting"
#SBATCH --gres=gpu:8
# ##SBATCH and "# SBATCH" are comments, as in Slurm:
python job.py
