//go:build !amd64

package auth

// haveGHASHAsm is false: no assembly for this architecture.
const haveGHASHAsm = false

// ghashUpdate2 updates y with the blocks of p, then those of q (both
// lengths multiples of 16).
func ghashUpdate2(y *[2]uint64, t *ghashTable, p, q []byte) {
	ghashGeneric(y, t, p)
	ghashGeneric(y, t, q)
}
