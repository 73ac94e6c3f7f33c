#!/bin/bash
#SBATCH --job-name="unclosed
#SBATCH --time=1:2:3:4 --gres=gpu:a:b:c
#SBATCH -N
