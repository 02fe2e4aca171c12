package cuda

import (
	"fmt"
	"math"
)

//go:generate sh kernels/genptx.sh

// kernel identifies one kernel of kernels/sinkhorn.cu.
type kernel int

// The kernels, in the order of the table of kernels/hostkernels.cpp.
const (
	kLSEPart kernel = iota
	kLSEFin
	kWRowPart
	kWColPart
	kRowFin
	kColFin
	kBarInit
	kEnvLogw
	kValuePart
	kSumFin
	kFill
	kFused
	numKernels
)

// name returns the kernel's symbol in the PTX module.
func (k kernel) name() string {
	switch k {
	case kLSEPart:
		return "lse_part"
	case kLSEFin:
		return "lse_fin"
	case kWRowPart:
		return "wrow_part"
	case kWColPart:
		return "wcol_part"
	case kRowFin:
		return "row_fin"
	case kColFin:
		return "col_fin"
	case kBarInit:
		return "bar_init"
	case kEnvLogw:
		return "env_logw"
	case kValuePart:
		return "value_part"
	case kSumFin:
		return "sum_fin"
	case kFill:
		return "fill"
	case kFused:
		return "fused"
	}
	return fmt.Sprintf("kernel(%d)", int(k))
}

// arity returns the kernel's number of parameters (each 8 bytes).
func (k kernel) arity() int {
	switch k {
	case kLSEPart:
		return 11
	case kLSEFin:
		return 6
	case kWRowPart:
		return 14
	case kWColPart:
		return 15
	case kRowFin:
		return 9
	case kColFin:
		return 12
	case kBarInit:
		return 10
	case kEnvLogw:
		return 9
	case kValuePart:
		return 9
	case kSumFin, kFill:
		return 3
	case kFused:
		return 2
	}
	return -1
}

// ptr is an address in the device's memory; 0 stands for a null pointer
// (an output that is not wanted).
type ptr uint64

// at returns the address of element k of the float64 array at p (0 for a
// null p).
func (p ptr) at(k int) ptr {
	if p == 0 {
		return 0
	}
	return p + ptr(8*k)
}

// Kernel arguments are passed as 8-byte words: gorgonia.org/cu's Launch
// copies 8 bytes per argument, and the kernels take pointers, int64_t and
// double only.
func (p ptr) arg() uint64       { return uint64(p) }
func intArg(v int) uint64       { return uint64(int64(v)) }
func floatArg(v float64) uint64 { return math.Float64bits(v) }

func boolArg(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// Launch geometry.
const (
	// blockSize is the number of threads of every block (one-dimensional).
	blockSize = 128
	// targetThreads is the number of threads a reduction sweep aims for:
	// rows × chunks. An H100 keeps 132 SMs × 2048 = 270336 threads resident.
	targetThreads = 1 << 18
	// defaultMinChunk is the shortest chunk of a split reduction.
	defaultMinChunk = 32
	// maxGridY is CUDA's limit on gridDim.y.
	maxGridY = 65535
	// valueChunk is the number of terms each thread of value_part sums.
	valueChunk = 256
)

// blocks returns the number of blocks covering n threads.
func blocks(n int) int { return max(1, ceilDiv(n, blockSize)) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// split returns how a reduction of nred terms for each of nout outputs is cut
// into chunks: nch chunks of chunk terms (the last one shorter), so that
// nout·nch threads reach about targetThreads, with chunks of at least
// minChunk terms and at most maxGridY chunks.
func split(nout, nred, minChunk int) (nch, chunk int) {
	nch = max(1, targetThreads/max(nout, 1))
	nch = min(nch, ceilDiv(nred, max(minChunk, 1)), maxGridY)
	nch = max(nch, 1)
	chunk = ceilDiv(nred, nch)
	nch = ceilDiv(nred, chunk)
	return nch, chunk
}
