// Package membuf allocates the message buffers of the benchmark tools
// already backed by memory.
//
// A buffer fresh from make is not backed by memory until it is first
// written: the first message received into it pays a page fault (and the
// clearing of a page) per 4 KiB, and a send buffer that was never written
// is read from the kernel's shared zero page. In a virtual machine whose
// host backs guest memory lazily, a first touch can also cost a fault in
// the host, which is far dearer. An application that
// reuses its buffers pays none of this, and neither do the baselines the
// benchmarks compare with (NetPIPE, sockperf), so the benchmarks touch
// their buffers before they start timing.
package membuf

// pageSize is the stride of the writes that touch every page.
const pageSize = 4096

// Touched returns a zeroed buffer of n bytes with every page written once
// (madvise(MADV_POPULATE_WRITE) is not enough: in a virtual machine the
// first writes after it can still fault in the host).
func Touched(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += pageSize {
		b[i] = 0
	}
	return b
}
