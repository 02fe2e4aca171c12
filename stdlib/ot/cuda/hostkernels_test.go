package cuda

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// hostKernels is a launcher backed by the kernels of sinkhorn.cu compiled
// as host C++ (kernels/hostkernels.cpp), running in a child process.
type hostKernels struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	w        *bufio.Writer
	r        *bufio.Reader
	stderr   bytes.Buffer
	index    [numKernels]uint64 // position of each kernel in the server's table
	buf      []byte
	launches int
	byKernel [numKernels]int
	graphs   int // graphs made
	// faultyGraphs makes graphs that leave out their last launch (tests
	// of the engine's check of its graphs).
	faultyGraphs bool
}

// hostBuild is the host kernels' program, compiled once for all the
// package's tests (buildHostKernels) into dir, which TestMain removes.
var hostBuild struct {
	once      sync.Once
	dir, path string
	skip      string // why the program cannot be built, when it cannot
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hostBuild.dir != "" {
		os.RemoveAll(hostBuild.dir)
	}
	os.Exit(code)
}

// buildHostKernels compiles kernels/hostkernels.cpp with g++, once per
// test binary, and returns the program's path. It skips the test when g++
// is not installed.
func buildHostKernels(t testing.TB) string {
	t.Helper()
	hostBuild.once.Do(func() {
		gxx, err := exec.LookPath("g++")
		if err != nil {
			hostBuild.skip = "g++ is not installed: the host-compiled kernels cannot be built"
			return
		}
		if hostBuild.dir, hostBuild.err = os.MkdirTemp("", "hostkernels"); hostBuild.err != nil {
			return
		}
		bin := filepath.Join(hostBuild.dir, "hostkernels")
		// -ffp-contract=off: no fused multiply-adds, like Go on amd64,
		// whatever the architecture.
		cmd := exec.Command(gxx, "-std=c++17", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
			"-o", bin, filepath.Join("kernels", "hostkernels.cpp"))
		if out, err := cmd.CombinedOutput(); err != nil {
			hostBuild.err = fmt.Errorf("compiling the host kernels: %v\n%s", err, out)
			return
		}
		hostBuild.path = bin
	})
	switch {
	case hostBuild.skip != "":
		t.Skip(hostBuild.skip)
	case hostBuild.err != nil:
		t.Fatal(hostBuild.err)
	}
	return hostBuild.path
}

// startHostKernels starts the program built by buildHostKernels and checks
// that its kernel table matches this package's (names and arities).
func startHostKernels(t testing.TB, bin string) *hostKernels {
	t.Helper()
	return startHostKernelsOrder(t, bin, 0)
}

// startHostKernelsOrder is startHostKernels with the simulated threads of
// a block resumed in the given order between barriers (shm_order in
// kernels/shim.h: 0 by index, 1 in reverse, more a random order from that
// seed).
func startHostKernelsOrder(t testing.TB, bin string, order uint64) *hostKernels {
	t.Helper()
	h := &hostKernels{cmd: exec.Command(bin)}
	h.cmd.Env = append(os.Environ(), fmt.Sprintf("SHM_SHIM_ORDER=%d", order))
	h.cmd.Stderr = &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.close() })
	h.w = bufio.NewWriterSize(h.stdin, 1<<16)
	h.r = bufio.NewReaderSize(stdout, 1<<16)
	for k := range h.index {
		h.index[k] = math.MaxUint64
	}
	seen := map[string]bool{}
	for pos := uint64(0); ; pos++ {
		line, err := h.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the kernel table: %v (%s)", err, h.failure())
		}
		f := strings.Fields(line)
		if len(f) == 1 && f[0] == "ready" {
			break
		}
		if len(f) == 2 && strings.HasPrefix(f[0], "fused_") {
			want, ok := fusedConsts[f[0]]
			if !ok {
				t.Fatalf("unexpected constant %q from the host kernels", line)
			}
			if v, _ := strconv.Atoi(f[1]); v != want {
				t.Fatalf("the fused kernel's %s is %s in fused.cuh, %d in fused.go", f[0], f[1], want)
			}
			seen[f[0]] = true
			pos--
			continue
		}
		if len(f) != 3 || f[0] != "kernel" {
			t.Fatalf("unexpected line %q from the host kernels", line)
		}
		k := kernelByName(f[1])
		if k < 0 {
			t.Fatalf("the host kernels have %s, which this package does not know", f[1])
		}
		if a, _ := strconv.Atoi(f[2]); a != k.arity() {
			t.Fatalf("kernel %s takes %d arguments in sinkhorn.cu, %d in kernels.go", f[1], a, k.arity())
		}
		h.index[k] = pos
	}
	for name := range fusedConsts {
		if !seen[name] {
			t.Fatalf("the host kernels did not print %s", name)
		}
	}
	for k, pos := range h.index {
		if pos == math.MaxUint64 {
			t.Fatalf("the host kernels lack %s", kernel(k).name())
		}
	}
	return h
}

// fusedConsts are the constants of the fused kernel that fused.go repeats,
// by the names the host kernels print them under.
var fusedConsts = map[string]int{"fused_words": fdWords, "fused_cb": fusedCullBlock, "fused_scr": fusedScratch}

func kernelByName(name string) kernel {
	for k := range numKernels {
		if k.name() == name {
			return k
		}
	}
	return -1
}

// failure returns the server's exit status and error output after a failed
// read or write.
func (h *hostKernels) failure() string {
	h.stdin.Close()
	err := h.cmd.Wait()
	return fmt.Sprintf("host kernels: %v: %s", err, strings.TrimSpace(h.stderr.String()))
}

func (h *hostKernels) close() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.word(6)
	h.w.Flush()
	h.stdin.Close()
	h.cmd.Wait()
}

func (h *hostKernels) word(v uint64) {
	h.buf = binary.LittleEndian.AppendUint64(h.buf[:0], v)
	h.w.Write(h.buf)
}

func (h *hostKernels) readWords(dst []uint64) error {
	if err := h.w.Flush(); err != nil {
		return errors.New(h.failure())
	}
	for i := range dst {
		var b [8]byte
		if _, err := io.ReadFull(h.r, b[:]); err != nil {
			return errors.New(h.failure())
		}
		dst[i] = binary.LittleEndian.Uint64(b[:])
	}
	return nil
}

func (h *hostKernels) exec(f func(l launcher) error) error { return f(h) }

func (h *hostKernels) alloc(n int) (ptr, error) {
	h.word(1)
	h.word(uint64(n))
	var p [1]uint64
	if err := h.readWords(p[:]); err != nil {
		return 0, err
	}
	return ptr(p[0]), nil
}

func (h *hostKernels) free(p ptr) error {
	h.word(2)
	h.word(uint64(p))
	return nil
}

func (h *hostKernels) upload(dst ptr, src []float64) error {
	h.word(3)
	h.word(uint64(dst))
	h.word(uint64(len(src)))
	for _, v := range src {
		h.word(math.Float64bits(v))
	}
	return nil
}

func (h *hostKernels) download(dst []float64, src ptr) error {
	h.word(4)
	h.word(uint64(src))
	h.word(uint64(len(dst)))
	w := make([]uint64, len(dst))
	if err := h.readWords(w); err != nil {
		return err
	}
	for i, v := range w {
		dst[i] = math.Float64frombits(v)
	}
	return nil
}

func (h *hostKernels) launch(k kernel, gridX, gridY, blockX, shared int, args []uint64) error {
	h.launches++
	h.byKernel[k]++
	h.word(5)
	h.word(h.index[k])
	h.word(uint64(gridX))
	h.word(uint64(gridY))
	h.word(uint64(blockX))
	h.word(uint64(shared))
	h.word(uint64(len(args)))
	for _, a := range args {
		h.word(a)
	}
	return nil
}

// makeGraph makes a graph that the host kernels run launch by launch,
// from its own copy of seq (a CUDA graph copies its launches' arguments):
// the engine's graphs, tested without a GPU.
func (h *hostKernels) makeGraph(seq *launchSeq) (graph, error) {
	h.graphs++
	g := &hostGraph{h: h}
	g.seq.copyFrom(seq)
	if h.faultyGraphs {
		last := g.seq.recs[len(g.seq.recs)-1]
		g.seq.recs = g.seq.recs[:len(g.seq.recs)-1]
		g.seq.args = g.seq.args[:len(g.seq.args)-last.nargs]
	}
	return g, nil
}

// hostGraph is a graph of the host kernels.
type hostGraph struct {
	h         *hostKernels
	seq       launchSeq
	destroyed bool
}

func (g *hostGraph) launch() error {
	if g.destroyed {
		return errors.New("host kernels: launch of a destroyed graph")
	}
	return g.seq.each(g.h.launch)
}

func (g *hostGraph) destroy() error {
	if g.destroyed {
		return errors.New("host kernels: graph destroyed twice")
	}
	g.destroyed = true
	return nil
}

// shimCounters are the host kernels' event counts (kernels/shim.h): the
// fused kernel's culling blocks visited and skipped, the barriers its
// blocks passed, and the rows of its forward sweeps summed in one pass
// and in two.
type shimCounters struct {
	visited, skipped, barriers, onePass, twoPass uint64
}

// counters returns the host kernels' event counts so far.
func (h *hostKernels) counters() (shimCounters, error) {
	h.word(7)
	var w [5]uint64
	if err := h.readWords(w[:]); err != nil {
		return shimCounters{}, err
	}
	return shimCounters{w[0], w[1], w[2], w[3], w[4]}, nil
}

// minus returns the counts of c since prev.
func (c shimCounters) minus(prev shimCounters) shimCounters {
	return shimCounters{c.visited - prev.visited, c.skipped - prev.skipped, c.barriers - prev.barriers,
		c.onePass - prev.onePass, c.twoPass - prev.twoPass}
}
