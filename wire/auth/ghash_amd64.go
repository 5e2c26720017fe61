package auth

import "golang.org/x/sys/cpu"

// haveGHASHAsm: ghashAVX2 may run (AVX2 and the 256-bit VPCLMULQDQ).
var haveGHASHAsm = cpu.X86.HasAVX2 && cpu.X86.HasAVX512VPCLMULQDQ

// haveGHASH512: ghashAVX512 may run too (AVX-512 with byte shuffles and
// the 512-bit VPCLMULQDQ). A variable, so that tests can run both paths.
var haveGHASH512 = haveGHASHAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// ghashAVX2 updates y with the n 16-byte blocks at p: 16 blocks per
// reduction with H^16 .. H^1 from t (the table from its second entry),
// then the rest with the last powers.
//
//go:noescape
func ghashAVX2(y *[2]uint64, t *[2]uint64, p *byte, n int)

// ghashAVX512 updates y with the n 16-byte blocks at p, then the m blocks
// at q (m <= 2), four blocks per register: 32 blocks of p per reduction,
// then the rest of p and q's blocks together under one more (at most 33
// blocks: the table holds H^33 .. H^1). Blocks past the ends are never
// read (masked loads).
//
//go:noescape
func ghashAVX512(y *[2]uint64, t *ghashTable, p *byte, n int, q *byte, m int)

// ghashUpdate2 updates y with the blocks of p, then those of q (both
// lengths multiples of 16; q at most two blocks on the 512-bit path).
func ghashUpdate2(y *[2]uint64, t *ghashTable, p, q []byte) {
	switch {
	case haveGHASH512 && len(q) <= 32:
		ghashAVX512(y, t, first(p), len(p)/16, first(q), len(q)/16)
	case haveGHASHAsm:
		if len(p) > 0 {
			ghashAVX2(y, &t[ghashBlocks-16], &p[0], len(p)/16)
		}
		if len(q) > 0 {
			ghashAVX2(y, &t[ghashBlocks-16], &q[0], len(q)/16)
		}
	default:
		ghashGeneric(y, t, p)
		ghashGeneric(y, t, q)
	}
}

// first returns the address of p's first byte, or nil if p is empty (the
// assembly then reads nothing there).
func first(p []byte) *byte {
	if len(p) == 0 {
		return nil
	}
	return &p[0]
}
