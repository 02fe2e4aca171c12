//go:build !linux

package sysmem

// total returns 0 (unknown) on systems where it is not implemented.
func total() (uint64, string) { return 0, "" }
