#!/bin/bash
#SBATCH --job-name=preprocess
#SBATCH --time=5
python preprocess.py
