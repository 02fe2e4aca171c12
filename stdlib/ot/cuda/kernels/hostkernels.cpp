// hostkernels.cpp runs the kernels of sinkhorn.cu on the CPU, compiled as
// host C++ through shim.h, and serves them to a Go process over stdin and
// stdout the way a GPU serves them through the CUDA driver: memory
// allocation, copies, and kernel launches with 8-byte arguments. The Go test
// (host_test.go) drives it with the same orchestration code (engine.go)
// that drives the GPU, so the test covers the kernels' arithmetic and the
// order and arguments of every launch.
//
// Build: g++ -std=c++17 -O2 -ffp-contract=off -o hostkernels hostkernels.cpp
//
// Protocol. At start the server writes one text line per kernel,
// "kernel NAME ARITY", then the fused kernel's constants that fused.go
// repeats ("fused_words N", the descriptor length; "fused_cb N", the
// culling block; "fused_scr N", the scratch per thread), then "ready". After that every message is a sequence of
// little-endian 64-bit words. Requests (first word the opcode):
//
//	1 ALLOC n            → reply: the address of n zeroed doubles
//	2 FREE addr
//	3 UPLOAD addr n w…   (n words follow)
//	4 DOWNLOAD addr n    → reply: n words
//	5 LAUNCH k gx gy bx smem nargs a…  (kernel index k in the table order,
//	  smem the bytes of dynamic shared memory per block)
//	6 QUIT
//	7 COUNTERS           → reply: the five words of shm_counters (shim.h)
//
// The environment variable SHM_SHIM_ORDER sets the order of the simulated
// threads between barriers (shm_order in shim.h; default 0, by index).
//
// Launches do not reply (like asynchronous CUDA launches); an invalid
// request (a pointer argument outside every allocation, a wrong argument
// count, an invalid launch configuration) makes the server print a message
// on stderr and exit with a non-zero status, which the client sees at its
// next read.
#include <cstring>
#include <map>
#include <type_traits>
#include <utility>

#include "sinkhorn.cu"

namespace {

// Conv converts one 8-byte launch argument to the kernel's parameter type.
template <class T> struct Conv;
template <> struct Conv<int64_t> {
	static int64_t get(uint64_t w) { return (int64_t)w; }
};
template <> struct Conv<double> {
	static double get(uint64_t w) {
		double v;
		memcpy(&v, &w, sizeof v);
		return v;
	}
};
template <class T> struct Conv<T *> {
	static T *get(uint64_t w) { return reinterpret_cast<T *>((uintptr_t)w); }
};

template <class F> struct Sig;
template <class... P> struct Sig<void (*)(P...)> {
	static constexpr size_t arity = sizeof...(P);
	static bool isPointer(size_t i) {
		static const bool p[] = {std::is_pointer<P>::value..., false};
		return p[i];
	}
	template <size_t... I>
	static void call(void (*k)(P...), const char *name, bool coop, unsigned gx, unsigned gy, unsigned bx, size_t smem,
	                 const uint64_t *a, std::index_sequence<I...>) {
		if (coop) {
			shm_launch_coop(name, gx, gy, bx, smem, k, Conv<P>::get(a[I])...);
		} else {
			shm_launch(name, gx, gy, bx, k, Conv<P>::get(a[I])...);
		}
	}
};

template <auto K>
void invoke(const char *name, bool coop, unsigned gx, unsigned gy, unsigned bx, size_t smem, const uint64_t *a) {
	using S = Sig<decltype(K)>;
	S::call(K, name, coop, gx, gy, bx, smem, a, std::make_index_sequence<S::arity>{});
}

// Entry is one kernel; coop kernels synchronize their blocks and use
// dynamic shared memory (see shim.h).
struct Entry {
	const char *name;
	size_t arity;
	bool coop;
	void (*invoke)(const char *, bool, unsigned, unsigned, unsigned, size_t, const uint64_t *);
	bool (*isPointer)(size_t);
};

#define ENTRY(k, coop) Entry{#k, Sig<decltype(&k)>::arity, coop, &invoke<&k>, &Sig<decltype(&k)>::isPointer}

const Entry table[] = {
	ENTRY(lse_part, false),  ENTRY(lse_fin, false),    ENTRY(wrow_part, false), ENTRY(wcol_part, false),
	ENTRY(row_fin, false),   ENTRY(col_fin, false),    ENTRY(bar_init, false),  ENTRY(env_logw, false),
	ENTRY(value_part, false), ENTRY(sum_fin, false),   ENTRY(fill, false),      ENTRY(fused, true),
};

[[noreturn]] void fail(const char *msg, uint64_t v) {
	fprintf(stderr, "hostkernels: %s (%llu)\n", msg, (unsigned long long)v);
	exit(2);
}

uint64_t readWord() {
	uint64_t w;
	if (fread(&w, sizeof w, 1, stdin) != 1) {
		if (feof(stdin)) {
			exit(0); // the client went away
		}
		fail("read error", 0);
	}
	return w;
}

void writeWords(const uint64_t *w, size_t n) {
	if (fwrite(w, sizeof *w, n, stdout) != n) {
		fail("write error", n);
	}
}

// allocs maps the address of every allocation to its size in doubles.
std::map<uintptr_t, uint64_t> allocs;

// inside reports whether [addr, addr + 8·n) lies inside one allocation.
bool inside(uint64_t addr, uint64_t n) {
	auto it = allocs.upper_bound((uintptr_t)addr);
	if (it == allocs.begin()) {
		return false;
	}
	--it;
	const uint64_t off = addr - it->first;
	return off % 8 == 0 && off / 8 + n <= it->second;
}

} // namespace

int main() {
	// SHM_SHIM_ORDER: the order of the threads between barriers (shm_order).
	if (const char *o = getenv("SHM_SHIM_ORDER")) {
		shm_order = strtoull(o, nullptr, 10);
	}
	static char inbuf[1 << 16], outbuf[1 << 16];
	setvbuf(stdin, inbuf, _IOFBF, sizeof inbuf);
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	for (const Entry &e : table) {
		printf("kernel %s %zu\n", e.name, e.arity);
	}
	printf("fused_words %d\n", (int)FD_WORDS);
	printf("fused_cb %d\n", (int)FUSED_CB);
	printf("fused_scr %d\n", (int)FUSED_SCR);
	printf("ready\n");
	fflush(stdout);
	uint64_t args[32];
	for (;;) {
		switch (readWord()) {
		case 1: {
			const uint64_t n = readWord();
			double *p = (double *)calloc(n > 0 ? n : 1, sizeof(double));
			if (!p) {
				fail("out of memory", n);
			}
			allocs[(uintptr_t)p] = n;
			const uint64_t addr = (uintptr_t)p;
			writeWords(&addr, 1);
			fflush(stdout);
			break;
		}
		case 2: {
			const uint64_t addr = readWord();
			auto it = allocs.find((uintptr_t)addr);
			if (it == allocs.end()) {
				fail("free of an unknown address", addr);
			}
			allocs.erase(it);
			free((void *)(uintptr_t)addr);
			break;
		}
		case 3: {
			const uint64_t addr = readWord(), n = readWord();
			if (!inside(addr, n)) {
				fail("upload outside every allocation", addr);
			}
			if (fread((void *)(uintptr_t)addr, sizeof(uint64_t), n, stdin) != n) {
				fail("short upload", n);
			}
			break;
		}
		case 4: {
			const uint64_t addr = readWord(), n = readWord();
			if (!inside(addr, n)) {
				fail("download outside every allocation", addr);
			}
			writeWords((const uint64_t *)(uintptr_t)addr, n);
			fflush(stdout);
			break;
		}
		case 5: {
			const uint64_t k = readWord(), gx = readWord(), gy = readWord(), bx = readWord(), smem = readWord(),
			               na = readWord();
			if (k >= sizeof table / sizeof table[0]) {
				fail("unknown kernel", k);
			}
			const Entry &e = table[k];
			if (na != e.arity || na > 32) {
				fprintf(stderr, "hostkernels: kernel %s takes %zu arguments, got %llu\n", e.name, e.arity,
				        (unsigned long long)na);
				exit(2);
			}
			for (uint64_t i = 0; i < na; i++) {
				args[i] = readWord();
				if (e.isPointer(i) && args[i] != 0 && !inside(args[i], 1)) {
					fprintf(stderr, "hostkernels: kernel %s: argument %llu (%#llx) points outside every allocation\n",
					        e.name, (unsigned long long)i, (unsigned long long)args[i]);
					exit(2);
				}
			}
			if (gx > 0xffffffffull || gy > 0xffffffffull || bx > 0xffffffffull) {
				fail("launch dimension out of range", gx);
			}
			if (smem > 0 && !e.coop) {
				fail("shared memory for a kernel that does not use it", smem);
			}
			e.invoke(e.name, e.coop, (unsigned)gx, (unsigned)gy, (unsigned)bx, (size_t)smem, args);
			break;
		}
		case 6:
			return 0;
		case 7:
			writeWords(shm_counters, 5);
			fflush(stdout);
			break;
		default:
			fail("unknown request", 0);
		}
	}
}
