#!/bin/bash
#SBATCH --output=run-%q.log
python x.py
