//go:build !unix

package main

// lockOutput does not lock on systems without flock: concurrent runs
// writing the same files are the user's care there.
func lockOutput([]string) (func(), error) { return func() {}, nil }

// lockCalibration does not lock on systems without flock.
func lockCalibration(string) (func(), error) { return func() {}, nil }
