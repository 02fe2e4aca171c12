// shim.h lets sinkhorn.cu compile either with nvcc (device code, the real
// CUDA built-ins) or as plain host C++ with g++, where a kernel launch is a
// sequential loop over every (block, thread) index. The multi-launch
// kernels use no shared memory, no __syncthreads and no atomics, so running
// the threads one after the other computes exactly what the GPU computes
// (up to the floating-point contraction nvcc may apply); the fused kernel
// synchronizes its blocks and runs through shm_launch_coop.
#ifndef SHM_OT_CUDA_SHIM_H
#define SHM_OT_CUDA_SHIM_H

#ifdef __CUDACC__

#include <stdint.h>

#define SHM_HOST_DEVICE __host__ __device__

// SHM_SHARED_DOUBLES declares the block's dynamic shared memory as an
// array of doubles.
#define SHM_SHARED_DOUBLES(name) extern __shared__ double name[]

// SHM_COUNT counts events on the host only (see below).
#define SHM_COUNT(k) ((void)0)

#else // host C++

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <vector>

#define __global__
#define __launch_bounds__(n)
#define __noinline__
#define __device__ static inline
#define __forceinline__
#define SHM_HOST_DEVICE static inline

// shm_counters counts events of the host-compiled kernels for the tests
// (the fused kernel's culling blocks: 0 visited, 1 skipped; 2: the
// barriers that blocks of shm_launch_coop passed; the rows of the fused
// kernel's forward sweeps summed in one pass, 3, and in two, 4);
// SHM_COUNT(k) increments counter k, and compiles to nothing on the GPU.
inline uint64_t shm_counters[5];
#define SHM_COUNT(k) (shm_counters[(k)]++)

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

// Block-synchronous kernels (the fused kernel) use __syncthreads and
// dynamic shared memory. shm_launch_coop runs each simulated thread of a
// block as a coroutine on the one host thread: __syncthreads switches back
// to the block's scheduler, which resumes every thread in turn until all of
// them reach the barrier, then lets them past it. A block whose threads
// disagree on the barriers (some finished while others wait) is an error,
// as it is undefined on a GPU. The shared memory is filled with NaN before
// each block, so a read of shared memory not written first shows in the
// results, and it is followed by guard words, checked after each block.
//
// shm_order sets the order in which the scheduler resumes the threads
// between two barriers: 0 by index, 1 in reverse, larger values a
// pseudo-random order drawn anew at every barrier from that seed. A
// correct kernel gives the same results in every order (its threads only
// read what others wrote before a barrier); a read that races with
// another thread's write gives different results in some order. The
// asynchronous copies (shm_async_copy) land at the copying thread's
// shm_async_wait, the latest a GPU may complete them.
inline uint64_t shm_order;
//
// The coroutines switch with shm_switch on x86-64 (the callee-saved
// registers and the stack pointer: no system call, unlike swapcontext,
// which saves the signal mask) and with ucontext elsewhere.
#if defined(__x86_64__)
struct shm_ctx {
	void *sp;
};
extern "C" void shm_switch(void **save, void *load);
asm(R"(
	.text
	.globl shm_switch
	.type shm_switch, @function
shm_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size shm_switch, .-shm_switch
)");
static inline void shm_ctx_swap(shm_ctx *from, shm_ctx *to) { shm_switch(&from->sp, to->sp); }
// shm_ctx_make prepares c to start entry (which must never return) on the
// given stack: shm_switch pops six registers and returns into entry, with
// the stack aligned as after a call.
static inline void shm_ctx_make(shm_ctx *c, char *stack, size_t size, void (*entry)()) {
	void **sp = (void **)(((uintptr_t)(stack + size)) & ~(uintptr_t)15);
	*--sp = nullptr; // entry's return address: never used
	*--sp = (void *)entry;
	for (int k = 0; k < 6; k++) {
		*--sp = nullptr;
	}
	c->sp = sp;
}
#else
struct shm_ctx {
	ucontext_t uc;
};
static inline void shm_ctx_swap(shm_ctx *from, shm_ctx *to) { swapcontext(&from->uc, &to->uc); }
static inline void shm_ctx_make(shm_ctx *c, char *stack, size_t size, void (*entry)()) {
	getcontext(&c->uc);
	c->uc.uc_stack.ss_sp = stack;
	c->uc.uc_stack.ss_size = size;
	c->uc.uc_link = nullptr;
	makecontext(&c->uc, entry, 0);
}
#endif

struct shm_copy {
	double *dst;
	double v;
};

struct shm_coop_state {
	bool active;
	unsigned cur;
	shm_ctx sched;
	std::vector<shm_ctx> ctx;
	std::vector<int> state; // shm_ready, shm_waiting or shm_done
	std::vector<char> stacks;
	std::vector<double> shared;
	std::vector<unsigned> order;               // the resumption order of the threads
	std::vector<std::vector<shm_copy>> copies; // each thread's copies in flight
	uint64_t rng;                              // the state of the random orders
	const std::function<void()> *body;
};
enum { shm_ready, shm_waiting, shm_done };
inline shm_coop_state shm_coop;
inline double *shm_shared;
constexpr size_t shm_stack = 1 << 16;

#define SHM_SHARED_DOUBLES(name) double *name = shm_shared

static inline void __syncthreads() {
	if (!shm_coop.active) {
		fprintf(stderr, "shim: __syncthreads in a kernel not launched with shm_launch_coop\n");
		exit(3);
	}
	shm_coop.state[shm_coop.cur] = shm_waiting;
	shm_ctx_swap(&shm_coop.ctx[shm_coop.cur], &shm_coop.sched);
}

// shm_async_copy starts copying *src to *dst for the current thread, and
// shm_async_wait completes the thread's copies (see shm_order).
static inline void shm_async_copy(double *dst, const double *src) {
	shm_coop.copies[shm_coop.cur].push_back(shm_copy{dst, *src});
}

static inline void shm_async_wait() {
	for (const shm_copy &c : shm_coop.copies[shm_coop.cur]) {
		*c.dst = c.v;
	}
	shm_coop.copies[shm_coop.cur].clear();
}

// shm_next_order sets c.order for the next round of resumptions.
static inline void shm_next_order(shm_coop_state &c) {
	const unsigned n = (unsigned)c.order.size();
	for (unsigned i = 0; i < n; i++) {
		c.order[i] = shm_order == 1 ? n - 1 - i : i;
	}
	if (shm_order > 1) {
		// Fisher–Yates with a 64-bit linear congruential generator.
		for (unsigned i = n - 1; i > 0; i--) {
			c.rng = c.rng * 6364136223846793005ull + 1442695040888963407ull;
			const unsigned j = (unsigned)((c.rng >> 33) % (i + 1));
			const unsigned t = c.order[i];
			c.order[i] = c.order[j];
			c.order[j] = t;
		}
	}
}

// shm_guard is the number of guard words after a block's shared memory,
// and shm_guard_bits their bits (a NaN no computation makes).
constexpr size_t shm_guard = 64;
constexpr uint64_t shm_guard_bits = 0x7ff4dead0000beefull;

// shm_resume runs thread tx of the block until it waits at a barrier or
// finishes. (Kept out of line: with ucontext the switch returns twice,
// which must not clobber the scheduler's loop variables.)
__attribute__((noinline)) static void shm_resume(unsigned tx) {
	shm_coop.cur = tx;
	threadIdx = shm_dim3{tx, 0, 0};
	shm_ctx_swap(&shm_coop.sched, &shm_coop.ctx[tx]);
}

// shm_coop_entry runs the kernel for the current thread, then returns to
// the scheduler for good.
static void shm_coop_entry() {
	(*shm_coop.body)();
	shm_coop.state[shm_coop.cur] = shm_done;
	shm_ctx_swap(&shm_coop.ctx[shm_coop.cur], &shm_coop.sched);
	fprintf(stderr, "shim: a finished thread was resumed\n");
	exit(3);
}

// shm_start makes thread tx of the block ready to run from the start of
// the kernel.
__attribute__((noinline)) static void shm_start(unsigned tx) {
	shm_coop_state &c = shm_coop;
	shm_ctx_make(&c.ctx[tx], c.stacks.data() + tx * shm_stack, shm_stack, shm_coop_entry);
	c.state[tx] = shm_ready;
}

template <class... P, class... A>
void shm_launch_coop(const char *name, unsigned gridX, unsigned gridY, unsigned blockX, size_t sharedBytes,
                     void (*kernel)(P...), A... args) {
	if (blockX == 0 || blockX > 1024 || gridX == 0 || gridX > 2147483647u || gridY == 0 || gridY > 65535 ||
	    sharedBytes > 227 * 1024) {
		fprintf(stderr, "shim: kernel %s: invalid launch configuration grid (%u, %u) block %u shared %zu\n", name, gridX,
		        gridY, blockX, sharedBytes);
		exit(3);
	}
	const std::function<void()> body = [&]() { kernel(args...); };
	shm_coop_state &c = shm_coop;
	c.body = &body;
	c.ctx.resize(blockX);
	c.state.resize(blockX);
	c.stacks.resize(blockX * shm_stack);
	const size_t nshared = sharedBytes / sizeof(double) + 1;
	c.shared.resize(nshared + shm_guard);
	c.order.resize(blockX);
	c.copies.resize(blockX);
	c.rng = shm_order;
	gridDim = shm_dim3{gridX, gridY, 1};
	blockDim = shm_dim3{blockX, 1, 1};
	c.active = true;
	for (unsigned by = 0; by < gridY; by++) {
		for (unsigned bx = 0; bx < gridX; bx++) {
			blockIdx = shm_dim3{bx, by, 0};
			for (size_t i = 0; i < c.shared.size(); i++) {
				c.shared[i] = NAN;
				if (i >= nshared) {
					memcpy(&c.shared[i], &shm_guard_bits, sizeof(double));
				}
			}
			shm_shared = c.shared.data();
			for (unsigned tx = 0; tx < blockX; tx++) {
				shm_start(tx);
			}
			for (;;) {
				shm_next_order(c);
				for (unsigned tx : c.order) {
					if (c.state[tx] == shm_ready) {
						shm_resume(tx);
					}
				}
				unsigned done = 0;
				for (unsigned tx = 0; tx < blockX; tx++) {
					done += c.state[tx] == shm_done;
				}
				if (done == blockX) {
					break;
				}
				if (done > 0) {
					fprintf(stderr, "shim: kernel %s: block %u: %u threads finished while the others wait at __syncthreads\n",
					        name, bx, done);
					exit(3);
				}
				for (unsigned tx = 0; tx < blockX; tx++) {
					c.state[tx] = shm_ready;
				}
				shm_counters[2]++;
			}
			for (size_t i = nshared; i < c.shared.size(); i++) {
				uint64_t w;
				memcpy(&w, &c.shared[i], sizeof w);
				if (w != shm_guard_bits) {
					fprintf(stderr, "shim: kernel %s: block %u wrote past its %zu bytes of shared memory\n", name, bx,
					        sharedBytes);
					exit(3);
				}
			}
			for (const std::vector<shm_copy> &q : c.copies) {
				if (!q.empty()) {
					fprintf(stderr, "shim: kernel %s: block %u: a thread ended with asynchronous copies not waited for\n",
					        name, bx);
					exit(3);
				}
			}
		}
	}
	c.active = false;
}

#endif // __CUDACC__

#endif // SHM_OT_CUDA_SHIM_H
