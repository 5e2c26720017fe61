package auth

import "golang.org/x/sys/cpu"

// haveGHASHAsm: ghashAVX2 may run (AVX2 and the 256-bit VPCLMULQDQ).
var haveGHASHAsm = cpu.X86.HasAVX2 && cpu.X86.HasAVX512VPCLMULQDQ

// ghashAVX2 updates y with the n 16-byte blocks at p: 16 blocks per
// reduction with H^16 .. H^1 from t, then the rest with the last powers.
//
//go:noescape
func ghashAVX2(y *[2]uint64, t *ghashTable, p *byte, n int)

// ghashUpdate updates y with the blocks of p (len(p) a multiple of 16).
func ghashUpdate(y *[2]uint64, t *ghashTable, p []byte) {
	if haveGHASHAsm {
		ghashAVX2(y, t, &p[0], len(p)/16)
		return
	}
	ghashGeneric(y, t, p)
}
