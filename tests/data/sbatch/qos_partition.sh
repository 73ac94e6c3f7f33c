#!/bin/bash
#SBATCH --qos=urgent
#SBATCH --partition=debug
#SBATCH --gres=gpu:1
python hotfix.py
