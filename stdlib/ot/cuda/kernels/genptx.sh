#!/bin/sh
# Compiles sinkhorn.cu to PTX for compute capability 8.0 (run by `go generate`
# in stdlib/ot/cuda) and records the SHA-256 of the sources it was made from
# in sinkhorn.ptx.sha256, which a test checks (nvcc 11.8's PTX is not
# byte-for-byte reproducible, so the PTX cannot be compared with a rebuild).
# nvcc comes from $NVCC (see .ci/cuda.sh, which prints it with the CUDA kit)
# or the PATH; nvcc 11.8 needs g++-12 with -allow-unsupported-compiler on
# Debian 12. With an output file as argument, only compiles into it.
set -eu
cd "$(dirname "$0")"
out=${1:-sinkhorn.ptx}
"${NVCC:-nvcc}" -ccbin "${NVCC_CCBIN:-g++-12}" -allow-unsupported-compiler -arch=compute_80 -ptx \
	-o "$out" sinkhorn.cu
if [ $# -eq 0 ]; then
	sha256sum sinkhorn.cu fused.cuh shim.h >sinkhorn.ptx.sha256
fi
