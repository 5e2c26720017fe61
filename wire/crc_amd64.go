package wire

import "golang.org/x/sys/cpu"

// haveSSE42: castagnoliTwo may run (the CRC32 instruction).
var haveSSE42 = cpu.X86.HasSSE42

// castagnoliTwo returns the CRC32C of a followed by b, in one call and
// without hash/crc32's dispatch: for the short frames of a round trip that
// dispatch, twice per frame, costs more than the computation.
//
//go:noescape
func castagnoliTwo(a, b []byte) uint32

// crc32cTwo returns the CRC32C of a followed by b.
func crc32cTwo(a, b []byte) uint32 {
	if haveSSE42 && len(a)+len(b) <= crcShort {
		return castagnoliTwo(a, b)
	}
	return crc32Update(crc32Update(0, a), b)
}
