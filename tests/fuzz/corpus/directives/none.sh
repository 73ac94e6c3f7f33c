echo no directives
#GPUFLEET --gpus=1
