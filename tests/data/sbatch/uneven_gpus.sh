#!/bin/bash
#SBATCH --nodes=3
#SBATCH --gpus=4
python x.py
