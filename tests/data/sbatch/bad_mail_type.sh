#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --mail-type=SOMETIMES
#SBATCH --mail-user=carol@example.org
./train
