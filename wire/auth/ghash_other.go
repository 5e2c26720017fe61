//go:build !amd64

package auth

// haveGHASHAsm is false: no assembly for this architecture.
const haveGHASHAsm = false

// ghashUpdate updates y with the blocks of p (len(p) a multiple of 16).
func ghashUpdate(y *[2]uint64, t *ghashTable, p []byte) { ghashGeneric(y, t, p) }
