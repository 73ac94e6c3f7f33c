#!/bin/bash
#SBATCH --export=NONE,OMP_NUM_THREADS=8,HOME
#SBATCH --chdir=/scratch/alice/run
#SBATCH --gres=gpu:1
python run.py
