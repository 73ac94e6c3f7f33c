#!/bin/bash
#SBATCH -N 2
#SBATCH --gpus=8
#SBATCH -t 4:00:00
python ddp.py
