#!/bin/bash
#GPUFLEET --gpus=2 --time=1h
#GPUFLEET --name=train --priority=high
# a comment

python train.py
#GPUFLEET --gpus=8
