#GPUFLEET --env=NCCL_DEBUG=INFO --env=A=b --export=NONE --team=vision --gpu-type=H100-80GB --workdir=/data
echo hi
