#GPUFLEET --workdir=relative --time=0
