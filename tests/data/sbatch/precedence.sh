#!/bin/bash
#SBATCH --gres=gpu:4
#SBATCH --time=10:00
#SBATCH --job-name=from-sbatch
#GPUFLEET --gpus=2 --name=from-gpufleet
python train.py
