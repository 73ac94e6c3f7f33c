#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --time=1:2:3:4
python x.py
