#!/bin/bash
#SBATCH -J vit-large
#SBATCH --gres=gpu:a100:4
#SBATCH -A vision
#SBATCH -t 2-00:00:00
#SBATCH --partition=gpu
#SBATCH --error=vit-%j.err

srun python train_vit.py
