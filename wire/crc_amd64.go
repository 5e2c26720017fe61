package wire

import "golang.org/x/sys/cpu"

// haveSSE42: castagnoliTwo may run (the CRC32 instruction).
var haveSSE42 = cpu.X86.HasSSE42

// haveFold: castagnoliFold may run (SSE4.2, AVX2 and the 256-bit
// VPCLMULQDQ).
var haveFold = haveSSE42 && cpu.X86.HasAVX2 && cpu.X86.HasAVX512VPCLMULQDQ

// castagnoliTwo returns the CRC32C of a followed by b, in one call and
// without hash/crc32's dispatch: for the short frames of a round trip that
// dispatch, twice per frame, costs more than the computation.
//
//go:noescape
func castagnoliTwo(a, b []byte) uint32

// castagnoliFold returns crc (a CRC32C as hash/crc32 returns it) updated
// with p, which must hold at least foldMin bytes: it folds 128 bytes per
// step with carry-less multiplications by the constants in k (foldConsts)
// and finishes with the CRC32 instruction.
//
//go:noescape
func castagnoliFold(crc uint32, p []byte, k *[9][2]uint64) uint32

// foldMin is the shortest payload crc32cTwo folds (castagnoliFold's first
// step loads 128 bytes): from there folding beats one CRC32 chain
// (castagnoliTwo) and hash/crc32's three (BenchmarkCRC).
const foldMin = 128

// foldK holds castagnoliFold's constants.
var foldK = foldConsts()

// foldConsts returns the constants that move a 16-byte chunk of the message
// forward by D bits, for the distances castagnoliFold uses, in the order
// it loads them: D = 1024 twice (both lanes of the main step), then 896 and
// 768, 640 and 512, 384 and 256 (the eight chunks of the last step folded
// into one), then 128 (one chunk at a time).
//
// Why these numbers (CRC32C is bit-reflected): a chunk read little-endian
// holds the coefficient of x^(127-j) in bit j, so it is x^64*l(x) + h(x)
// for l and h read from its low and high words. Moved D bits forward it is
// l*x^(D+64) + h*x^D modulo the polynomial. The carry-less product of a
// word with a constant c stored reflected in 64 bits lands in the chunk's
// bit order multiplied by one more x, so the constants are
// x^(D+63) mod P for the low word and x^(D-1) mod P for the high one.
func foldConsts() *[9][2]uint64 {
	pair := func(d int) [2]uint64 { return [2]uint64{rev64(xPowMod(d + 63)), rev64(xPowMod(d - 1))} }
	return &[9][2]uint64{pair(1024), pair(1024), pair(896), pair(768), pair(640), pair(512), pair(384), pair(256), pair(128)}
}

// xPowMod returns x^n modulo the CRC32C polynomial (0x1EDC6F41, the
// coefficient of x^i in bit i).
func xPowMod(n int) uint32 {
	v := uint64(1)
	for range n {
		v <<= 1
		if v&(1<<32) != 0 {
			v ^= 1<<32 | 0x1EDC6F41
		}
	}
	return uint32(v)
}

// rev64 returns the 64-bit word with the coefficient of x^d of v (at most
// degree 31) in bit 63-d.
func rev64(v uint32) uint64 {
	var r uint64
	for d := 0; d < 32; d++ {
		if v>>d&1 == 1 {
			r |= 1 << (63 - d)
		}
	}
	return r
}

// crc32cTwo returns the CRC32C of a followed by b.
func crc32cTwo(a, b []byte) uint32 {
	if haveFold && len(b) >= foldMin && len(a) <= crcShort {
		return castagnoliFold(castagnoliTwo(a, nil), b, foldK)
	}
	if haveSSE42 && len(a)+len(b) <= crcShort {
		return castagnoliTwo(a, b)
	}
	return crc32Update(crc32Update(0, a), b)
}
