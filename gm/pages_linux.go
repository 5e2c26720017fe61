package gm

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapped returns an error wrapping MemoryFault if a page of [first,
// last] (page numbers) is not mapped in this process (mincore(2) fails
// with ENOMEM), so that memory that is not there is never registered: a
// remote put or get would otherwise fault the process.
func mapped(first, last uint64) error {
	const chunk = 1 << 12 // pages per mincore call
	var vec [chunk]byte
	for pg := first; ; {
		n := min(last-pg+1, chunk)
		if n == 0 { // [first, last] is the whole address space
			n = chunk
		}
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(pg<<pageShift), uintptr(n<<pageShift), uintptr(unsafe.Pointer(&vec[0])))
		if errno != 0 {
			err := error(errno)
			if errors.Is(err, unix.ENOMEM) {
				return fmt.Errorf("%w: [%#x, %#x) is not mapped memory of this process", MemoryFault, pg<<pageShift, (pg+n)<<pageShift)
			}
			return fmt.Errorf("%w: mincore [%#x, %#x): %w", MemoryFault, pg<<pageShift, (pg+n)<<pageShift, err)
		}
		if last-pg < n {
			return nil
		}
		pg += n
	}
}
