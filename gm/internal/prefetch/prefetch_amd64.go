package prefetch

import "unsafe"

// lines issues PREFETCHT0 for each 64-byte line of the n > 0 bytes at p
// and returns how many it issued.
//
//go:noescape
func lines(p unsafe.Pointer, n int) int
