#!/bin/bash
#SBATCH --dependency=afterok:12:13,afterany:14
#SBATCH --gres=gpu:1
#SBATCH --kill-on-invalid-dep=yes
python evaluate.py
