#!/bin/bash
##SBATCH --gres=gpu:8
# SBATCH --gres=gpu:8
#SBATCH -N1 -n 1 -G 2 -t 4:00:00
#SBATCH -o out.%j -e err.%j -J "short opts" -p gpu
#SBATCH --requeue   # requeue on preemption
python job.py
