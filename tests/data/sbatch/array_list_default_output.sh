#!/bin/bash
#SBATCH --array=1,3,5
#SBATCH --gres=gpu:1
python eval.py --fold "$SLURM_ARRAY_TASK_ID"
