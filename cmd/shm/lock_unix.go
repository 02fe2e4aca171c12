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

// lockOutput takes the output files paths for this run: an exclusive,
// non-blocking flock on a lock file beside each (".NAME.lock"), which the
// kernel releases when the process ends in any way (kill -9 included), so
// a lock never goes stale. A second run writing one of the same files
// (the same model and chain ids in the same folder) is refused with the
// pid of the first; runs of other chains (--chain-id) may share the
// folder. The returned function releases the locks.
func lockOutput(paths []string) (func(), error) {
	return lockFiles(paths, "wait for it to end, or give another --output or --chain-id")
}

// lockCalibration takes a calibration's folder for this process: a
// second calibration of the same --dir at once is refused (both would run
// every task).
func lockCalibration(dir string) (func(), error) {
	return lockFiles([]string{filepath.Join(dir, "plan.json")}, "wait for it to end")
}

// lockFiles is lockOutput with the advice of its refusal.
func lockFiles(paths []string, advice string) (func(), error) {
	var held []*os.File
	release := func() {
		for _, f := range held {
			os.Remove(f.Name())
			f.Close()
		}
	}
	for _, p := range paths {
		dir, base := filepath.Split(p)
		f, err := os.OpenFile(filepath.Join(dir, "."+base+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			release()
			return nil, fmt.Errorf("locking %s: %w", p, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			pid := make([]byte, 32)
			n, _ := f.Read(pid)
			f.Close()
			release()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s is being written by another shm run (pid %s): %s", p, strings.TrimSpace(string(pid[:n])), advice)
			}
			return nil, fmt.Errorf("locking %s: %w", p, err)
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		held = append(held, f)
	}
	return release, nil
}
