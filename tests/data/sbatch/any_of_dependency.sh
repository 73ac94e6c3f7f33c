#!/bin/bash
#SBATCH --dependency=afterok:12?afterok:13
python x.py
