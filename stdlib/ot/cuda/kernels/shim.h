// shim.h lets sinkhorn.cu compile either with nvcc (device code, the real
// CUDA built-ins) or as plain host C++ with g++, where a kernel launch is a
// sequential loop over every (block, thread) index. The kernels use no
// shared memory, no __syncthreads and no atomics, so running the threads one
// after the other computes exactly what the GPU computes (up to the
// floating-point contraction nvcc may apply).
#ifndef SHM_OT_CUDA_SHIM_H
#define SHM_OT_CUDA_SHIM_H

#ifdef __CUDACC__

#include <stdint.h>

#define SHM_HOST_DEVICE __host__ __device__

#else // host C++

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define __global__
#define __device__ static inline
#define __forceinline__
#define SHM_HOST_DEVICE static inline

// shm_dim3 stands for CUDA's dim3/uint3.
struct shm_dim3 {
	unsigned x, y, z;
};

// The coordinates of the simulated thread being run. They are set by
// shm_launch before each call of the kernel function; the host harness is
// single-threaded.
inline shm_dim3 threadIdx, blockIdx, blockDim, gridDim;

// shm_launch runs kernel(args...) once for every thread of a gridX×gridY
// grid of one-dimensional blocks of blockX threads, in order. It rejects the
// launch configurations a GPU rejects (a block of more than 1024 threads, a
// grid taller than 65535 blocks), so orchestration errors show up on the host
// too.
template <class... P, class... A>
void shm_launch(const char *name, unsigned gridX, unsigned gridY, unsigned blockX, void (*kernel)(P...), A... args) {
	if (blockX == 0 || blockX > 1024 || gridX == 0 || gridX > 2147483647u || gridY == 0 || gridY > 65535) {
		fprintf(stderr, "shim: kernel %s: invalid launch configuration grid (%u, %u) block %u\n", name, gridX, gridY, blockX);
		exit(3);
	}
	gridDim = shm_dim3{gridX, gridY, 1};
	blockDim = shm_dim3{blockX, 1, 1};
	for (unsigned by = 0; by < gridY; by++) {
		for (unsigned bx = 0; bx < gridX; bx++) {
			for (unsigned tx = 0; tx < blockX; tx++) {
				blockIdx = shm_dim3{bx, by, 0};
				threadIdx = shm_dim3{tx, 0, 0};
				kernel(args...);
			}
		}
	}
}

#endif // __CUDACC__

#endif // SHM_OT_CUDA_SHIM_H
