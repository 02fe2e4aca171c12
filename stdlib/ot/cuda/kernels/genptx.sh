#!/bin/sh
# Compiles sinkhorn.cu to PTX for compute capability 8.0 (run by `go generate`
# in stdlib/ot/cuda). nvcc comes from $NVCC (see .ci/cuda.sh, which prints it
# with the CUDA kit) or the PATH. nvcc 11.8 needs g++-12 with
# -allow-unsupported-compiler on Debian 12.
set -eu
cd "$(dirname "$0")"
exec "${NVCC:-nvcc}" -ccbin "${NVCC_CCBIN:-g++-12}" -allow-unsupported-compiler -arch=compute_80 -ptx \
	-o sinkhorn.ptx sinkhorn.cu
