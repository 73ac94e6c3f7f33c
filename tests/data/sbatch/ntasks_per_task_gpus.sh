#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --gpus-per-task=1
#SBATCH --signal=B:USR1@120
srun python worker.py
