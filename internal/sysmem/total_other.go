//go:build !linux

package sysmem

// Total returns 0 (unknown) on systems where it is not implemented.
func Total() (uint64, string) { return 0, "" }
