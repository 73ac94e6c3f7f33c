#!/bin/bash
#SBATCH --gres=gpu:a100:two
python x.py
