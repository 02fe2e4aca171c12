//go:build linux

package sysmem

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// total returns the memory this process may use, in bytes (0 if
// unknown), and what bounds it: the smallest of the machine's physical
// memory, the address-space limit (RLIMIT_AS, ulimit -v) and the memory
// limit of the process's control group (cgroup v2 memory.max, or v1
// memory.limit_in_bytes).
func total() (uint64, string) {
	var total uint64
	source := ""
	use := func(n uint64, what string) {
		if n > 0 && (total == 0 || n < total) {
			total, source = n, what
		}
	}
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err == nil {
		use(uint64(info.Totalram)*uint64(info.Unit), "this machine's memory")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil && lim.Cur != ^uint64(0) {
		use(addressSpaceLeft(lim.Cur), "the address space left under ulimit -v")
	}
	for _, f := range cgroupLimitFiles() {
		if n, ok := readLimit(f); ok {
			use(n, "the control group's memory limit")
		}
	}
	return total, source
}

// addressSpaceLeft returns the part of an address-space limit of limit
// bytes that the process's data may still take (at least 1): the limit
// counts every mapping, not only the memory in use, and before main runs
// the Go runtime has reserved over a gigabyte (its page allocator's
// summaries, uncommitted) and the C library an arena per thread. So the
// address space mapped now and threadReserve for the threads still to
// start are subtracted.
func addressSpaceLeft(limit uint64) uint64 {
	used, ok := addressSpaceUsed()
	if !ok {
		return limit
	}
	reserve := used + threadReserve*uint64(runtime.GOMAXPROCS(0)+4)
	if limit <= reserve {
		return 1
	}
	return limit - reserve
}

// threadReserve is the address space a thread may map: its stack and the
// C library's malloc arena (64 MiB) of a cgo binary.
const threadReserve = 72 << 20

// addressSpaceUsed returns the size of the process's address space (the
// first field of /proc/self/statm, in pages).
func addressSpaceUsed() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	field, _, _ := strings.Cut(string(b), " ")
	pages, err := strconv.ParseUint(field, 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}

// cgroupLimitFiles are the files that may hold this process's cgroup
// memory limit: v2's memory.max of its group, and v1's
// memory.limit_in_bytes.
func cgroupLimitFiles() []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files, "/sys/fs/cgroup"+parts[2]+"/memory.max", "/sys/fs/cgroup/memory.max")
		case strings.Contains(","+parts[1]+",", ",memory,"):
			files = append(files, "/sys/fs/cgroup/memory"+parts[2]+"/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	return files
}

// readLimit reads a cgroup limit file: a number of bytes, or "max".
func readLimit(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	// v1 writes "no limit" as a huge number (a page-rounded 2^63 − 1).
	if err != nil || n == 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}
