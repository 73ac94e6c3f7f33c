#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --time
python x.py
