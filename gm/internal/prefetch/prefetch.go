// Package prefetch asks the processor to start loading memory that the
// caller will read soon, so that the read finds it in the cache instead of
// waiting for it.
//
// The engine uses it for the bytes of a long message: a sender copies each
// segment into a frame just before the kernel sends it, and the kernel's
// work between two copies (most of a streaming sender's time) pushes the
// message out of the processor's view, so every copy started by waiting
// for main memory or the last-level cache. Asking for the segments ahead
// lets those loads run while the kernel works.
package prefetch

import "unsafe"

// Range asks for every cache line of b. It does nothing on platforms
// without a prefetch instruction here, and never faults: a prefetch is
// only a hint.
func Range(b []byte) {
	if len(b) > 0 {
		lines(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	}
}

// lineSize is the cache line size the prefetch loop steps by.
const lineSize = 64
