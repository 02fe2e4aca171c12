#!/usr/bin/env bash
# CI checks of the CUDA variant (issue 7), on a machine without a GPU:
#  1. fetch the minimal CUDA 11.8 kit (cuda.h, the stub libcuda.so, nvcc)
#     with ../shared/tools/cuda-kit.sh into a cache folder, unless it is
#     already there (~858 MB download, ~82 MB kept);
#  2. compile the .cu sources with nvcc (needs g++-12; skipped with a message
#     without it), and assemble the committed PTX with ptxas for sm_80 and
#     sm_90;
#  3. go vet with the cuda tag, and compile and link the test binaries of
#     the packages that use gorgonia.org/cu (they are not run: a cuda-tagged
#     binary exits at start without a GPU);
#  4. run the host-compiled kernels' tests (the .cu sources compiled as host
#     C++ with g++: the multi-launch and the fused kernels compared with
#     package ot to 1e-12 on the reference vectors, and batched fused
#     launches against the same evaluations alone, bitwise) and the check
#     that the committed PTX was generated from the current sources, which
#     `go test ./...` also runs.
# With SHM_CUDA_RUN=1 on a machine with an NVIDIA GPU it also runs the GPU
# tests (values and gradients against the CPU to 1e-9, in package cuda and
# through the sinkhorn tape node, and the auto backend's threshold).
#
# Environment: SHM_CUDA_KIT, the kit's folder (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/shm-cudakit).
set -euo pipefail
cd "$(dirname "$0")/.."

. .ci/cudaenv.sh

# The kernel sources compile for the device. (That the committed PTX was
# generated from them is TestPTXUpToDate's job: nvcc 11.8's output is not
# byte-for-byte reproducible, so the script cannot compare it with a rebuild.)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v g++-12 >/dev/null; then
  sh stdlib/ot/cuda/kernels/genptx.sh "$tmp/sinkhorn.ptx"
else
  echo "cuda.sh: g++-12 not found (nvcc 11.8 needs it): not compiling the kernels with nvcc"
fi
# The committed PTX assembles for Ampere (sm_80) and Hopper (sm_90), as the
# driver's JIT will do.
for arch in sm_80 sm_90; do
  "$root/usr/bin/ptxas" -arch="$arch" -o "$tmp/sinkhorn_$arch.cubin" stdlib/ot/cuda/kernels/sinkhorn.ptx
done

# The cuda build compiles, vets and links.
go vet -tags cuda ./...
for pkg in ./stdlib/ot/cuda ./stdlib/sinkhorn; do
  go test -tags cuda -c -o "$tmp/$(basename "$pkg").test" "$pkg"
done

# The kernels compiled as host C++ agree with package ot, and the committed
# PTX is up to date.
go test -count=1 -run 'TestHostKernels|TestFusedBatch|TestInvalidInputs|TestSplit|TestPTXUpToDate' ./stdlib/ot/cuda

if [ "${SHM_CUDA_RUN:-}" = 1 ]; then
  (cd stdlib/ot/cuda && "$tmp/cuda.test" -test.run 'TestGPU' -test.v)
  (cd stdlib/sinkhorn && "$tmp/sinkhorn.test" -test.v)
fi
echo "cuda.sh: ok"
