//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <string.h>

// shmGraph builds the executable graph of n kernel launches, each after
// the one before: launch i runs fns[i] on a grid of dims[4i] × dims[4i+1]
// blocks of dims[4i+2] threads with dims[4i+3] bytes of dynamic shared
// memory, and takes the nargs[i] 8-byte arguments that follow those of
// the launches before it in args. The driver copies the arguments when it
// adds a node; the graph itself is destroyed once instantiated.
static CUresult shmGraph(CUgraphExec *exec, int n, const CUfunction *fns, const unsigned *dims,
                         const int *nargs, unsigned long long *args) {
	CUgraph g;
	CUresult r = cuGraphCreate(&g, 0);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	CUgraphNode prev = NULL;
	void *params[32];
	for (int i = 0; i < n && r == CUDA_SUCCESS; i++) {
		if (nargs[i] > 32) {
			r = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		for (int k = 0; k < nargs[i]; k++) {
			params[k] = &args[k];
		}
		args += nargs[i];
		CUDA_KERNEL_NODE_PARAMS p;
		memset(&p, 0, sizeof p);
		p.func = fns[i];
		p.gridDimX = dims[4 * i];
		p.gridDimY = dims[4 * i + 1];
		p.gridDimZ = 1;
		p.blockDimX = dims[4 * i + 2];
		p.blockDimY = 1;
		p.blockDimZ = 1;
		p.sharedMemBytes = dims[4 * i + 3];
		p.kernelParams = params;
		CUgraphNode node;
		r = cuGraphAddKernelNode(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &p);
		prev = node;
	}
	if (r == CUDA_SUCCESS) {
		r = cuGraphInstantiateWithFlags(exec, g, 0);
	}
	cuGraphDestroy(g);
	return r;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

var _ grapher = gpu{}

// gpuGraph is a CUDA graph of a recorded sequence of launches.
type gpuGraph struct{ exec C.CUgraphExec }

// makeGraph instantiates the launches of seq as a CUDA graph, whose
// launches run one after the other as the launcher's do. It runs on the
// device's thread.
func (g gpu) makeGraph(seq *launchSeq) (graph, error) {
	n := len(seq.recs)
	if n == 0 {
		return nil, fmt.Errorf("cuda: a graph of no launches")
	}
	if unsafe.Sizeof(cu.Function{}) != unsafe.Sizeof(C.CUfunction(nil)) {
		return nil, fmt.Errorf("cuda: gorgonia.org/cu's Function is not a CUfunction")
	}
	fns := make([]C.CUfunction, n)
	dims := make([]C.uint, 4*n)
	nargs := make([]C.int, n)
	for i, r := range seq.recs {
		// gorgonia.org/cu's Function holds the driver's CUfunction and
		// nothing else.
		fns[i] = *(*C.CUfunction)(unsafe.Pointer(&g.d.fns[r.k]))
		dims[4*i], dims[4*i+1], dims[4*i+2], dims[4*i+3] = C.uint(r.gridX), C.uint(r.gridY), C.uint(r.blockX), C.uint(r.shared)
		nargs[i] = C.int(r.nargs)
	}
	args := make([]C.ulonglong, max(len(seq.args), 1))
	for i, a := range seq.args {
		args[i] = C.ulonglong(a)
	}
	var exec C.CUgraphExec
	if r := C.shmGraph(&exec, C.int(n), &fns[0], &dims[0], &nargs[0], &args[0]); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuda: making a graph of %d launches: CUresult %d", n, int(r))
	}
	return &gpuGraph{exec: exec}, nil
}

// launch queues the graph on the default stream, where the launcher's
// launches and copies go: a download after it waits for it.
func (gg *gpuGraph) launch() error {
	if r := C.cuGraphLaunch(gg.exec, nil); r != C.CUDA_SUCCESS {
		return fmt.Errorf("CUresult %d", int(r))
	}
	return nil
}

func (gg *gpuGraph) destroy() error {
	if r := C.cuGraphExecDestroy(gg.exec); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuda: destroying a graph: CUresult %d", int(r))
	}
	return nil
}
