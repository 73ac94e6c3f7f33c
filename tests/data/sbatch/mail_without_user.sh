#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --mail-type=FAIL
./train
