//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockName is the lock file of an output folder.
const lockName = ".shm.lock"

// lockOutput takes the output folder dir for this run: an exclusive,
// non-blocking flock on dir/.shm.lock, which the kernel releases when the
// process ends in any way (kill -9 included), so a lock never goes stale.
// A second run into the same folder is refused with the pid of the first.
// The returned function releases the lock.
func lockOutput(dir string) (func(), error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the output folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := make([]byte, 32)
		n, _ := f.Read(pid)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("output folder %s is in use by another shm run (pid %s): wait for it to end, or give another --output", dir, strings.TrimSpace(string(pid[:n])))
		}
		return nil, fmt.Errorf("locking the output folder %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}
