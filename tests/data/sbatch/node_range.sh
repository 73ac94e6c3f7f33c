#!/bin/bash
#SBATCH --nodes=2-4
#SBATCH --gpus-per-node=4
python x.py
