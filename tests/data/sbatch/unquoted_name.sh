#!/bin/bash
#SBATCH --job-name=my job
python x.py
