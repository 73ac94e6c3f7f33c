#GPUFLEET --gpus=two --time=forever
