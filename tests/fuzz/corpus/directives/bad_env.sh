#GPUFLEET --env=1BAD=x --env=GPUFLEET_JOB_ID=3 --priority=urgent
