#!/bin/bash
#SBATCH --partition=bigmem
#SBATCH --gres=gpu:1
#SBATCH --exclusive
python big.py
