//go:build !amd64

package prefetch

import "unsafe"

func lines(p unsafe.Pointer, n int) int {
	start := uintptr(p) &^ (lineSize - 1)
	return int((uintptr(p)+uintptr(n)-1-start)/lineSize + 1)
}
