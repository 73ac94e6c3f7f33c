#!/bin/bash
#SBATCH --job-name=resnet50
#SBATCH --gres=gpu:2
#SBATCH --time=01:30:00
#SBATCH --output=logs/%x-%j.out

module load cuda  # harmless where there are no modules
python train.py --epochs 90
