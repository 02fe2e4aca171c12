# Sourced by .ci/cuda.sh and bench/cuda.sh: makes the minimal CUDA 11.8
# kit available (fetched with ../shared/tools/cuda-kit.sh into
# SHM_CUDA_KIT, default ${XDG_CACHE_HOME:-$HOME/.cache}/shm-cudakit, unless
# it is already there: ~858 MB download, ~82 MB kept) and exports the cgo
# settings that build the cuda tag against it, and NVCC.
kit=${SHM_CUDA_KIT:-${XDG_CACHE_HOME:-$HOME/.cache}/shm-cudakit}
root=$kit/root
nvcc=$root/usr/lib/nvidia-cuda-toolkit/bin/nvcc
if [ ! -f "$root/usr/include/cuda.h" ] || [ ! -f "$root/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" ] ||
  [ ! -x "$nvcc" ] || [ ! -x "$root/usr/bin/ptxas" ]; then
  echo "cudaenv.sh: fetching the CUDA kit into $kit" >&2
  rm -rf "$kit"
  bash ../shared/tools/cuda-kit.sh "$kit" >/dev/null
fi
export CGO_ENABLED=1
export CGO_CFLAGS="-I$root/usr/include"
export CGO_LDFLAGS="-L$root/usr/lib/x86_64-linux-gnu/stubs"
export NVCC=$nvcc
