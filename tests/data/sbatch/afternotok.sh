#!/bin/bash
#SBATCH --dependency=afternotok:12
python cleanup.py
