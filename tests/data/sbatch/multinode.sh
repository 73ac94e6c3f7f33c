#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --time=1-12
#SBATCH --job-name=llm-pretrain

torchrun --nnodes "$SLURM_NNODES" --node-rank "$SLURM_PROCID" --nproc-per-node 8 pretrain.py
