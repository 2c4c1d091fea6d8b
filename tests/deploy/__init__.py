"""Tests of deploy/: the container image, SLURM on localhost, the job scripts and manifests."""
