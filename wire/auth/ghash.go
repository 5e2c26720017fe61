package auth

import "encoding/binary"

// GHASH-AES computed by this package (docs/PROTOCOL.md section 19.1): the
// same tags as AES-128-GCM's (the stdlib path in Key.ghash), with the
// field arithmetic of GHASH done here so that a frame costs one pass of
// carry-less multiplications and no per-call GCM set-up (the nonce, the
// counter block's encryption, the length block through an interface).
//
// Representation. A 16-byte block B is the 128-bit integer read big-endian
// (u128{hi: B[0:8], lo: B[8:16]}): GHASH's bit-reflected order puts the
// coefficient of x^i at bit 127-i of that integer. The carry-less product
// of two such integers, read as 256 bits, is then the reflected image of
// a*b*x, so the stored multiplier is b*x^-1 (xinv) and no shift is needed;
// the 256-bit product is reduced modulo x^128 + x^7 + x^2 + x + 1 by two
// 64-bit carry-less multiplications by polyK (reduce).

// polyK is the reflected image of x^128 mod P without its constant term,
// placed as reduce needs it: bits 63, 62 and 57 of a 64-bit word.
const polyK = 0xc200000000000000

// ghashBlocks is the number of powers of H a key keeps: the 256-bit
// assembly multiplies 16 blocks per reduction, the 512-bit one 32, and up
// to 33 at the end of a tag (31 blocks of the frame and the two last
// blocks, see ghashUpdate2).
const ghashBlocks = 33

// u128 is a 128-bit field element in the reflected representation.
type u128 struct{ lo, hi uint64 }

// ghashTable holds H^33 .. H^1, each as xinv(H^i), low word first: the
// layout the assembly loads two or four at a time.
type ghashTable [ghashBlocks][2]uint64

// clmul64 returns the carry-less product of x and y.
func clmul64(x, y uint64) (lo, hi uint64) {
	for i := uint(0); i < 64; i++ {
		if y>>i&1 == 1 {
			lo ^= x << i
			if i > 0 {
				hi ^= x >> (64 - i)
			}
		}
	}
	return lo, hi
}

// xinv returns w*x^-1: x^-1 = x^127 + x^6 + x + 1, so the reflected
// integer shifts left by one and, when the constant term falls out, takes
// the reflected image of x^-1 (bits 127, 126, 121 and 0).
func xinv(w u128) u128 {
	carry := w.hi >> 63
	r := u128{lo: w.lo << 1, hi: w.hi<<1 | w.lo>>63}
	if carry == 1 {
		r.hi ^= polyK
		r.lo ^= 1
	}
	return r
}

// reduce returns the field element of the 256-bit reflected product
// q3:q2:q1:q0 (q0 holds the coefficients of x^255 .. x^192): each of the
// two low words w stands for w*x^128, and x^128 is x^7 + x^2 + x + 1.
func reduce(q0, q1, q2, q3 uint64) u128 {
	tlo, thi := clmul64(q0, polyK)
	q1 ^= tlo
	q2 ^= thi ^ q0
	ulo, uhi := clmul64(q1, polyK)
	q2 ^= ulo
	q3 ^= uhi ^ q1
	return u128{lo: q2, hi: q3}
}

// gmul returns a*b in GHASH's field.
func gmul(a, b u128) u128 { return mulx(a, xinv(b)) }

// mulx returns a*b in GHASH's field for bx = xinv(b), the form the table
// keeps: the 256-bit carry-less product, reduced.
func mulx(a, bx u128) u128 {
	ll, lh := clmul64(a.lo, bx.lo)
	hl, hh := clmul64(a.hi, bx.hi)
	m1l, m1h := clmul64(a.lo, bx.hi)
	m2l, m2h := clmul64(a.hi, bx.lo)
	ml, mh := m1l^m2l, m1h^m2h
	return reduce(ll, lh^ml, hl^mh, hh)
}

// load returns the element of a 16-byte block.
func load(b []byte) u128 {
	return u128{hi: binary.BigEndian.Uint64(b[0:8]), lo: binary.BigEndian.Uint64(b[8:16])}
}

// newGHASHTable returns the table of the GHASH key whose block is h
// (AES(K1, 0^128)).
func newGHASHTable(h []byte) ghashTable {
	var t ghashTable
	hv := load(h)
	p := hv
	for i := 1; i <= ghashBlocks; i++ {
		x := xinv(p)
		t[ghashBlocks-i] = [2]uint64{x.lo, x.hi}
		p = gmul(p, hv)
	}
	return t
}

// ghashGeneric updates y with the 16-byte blocks of p (len(p) a multiple
// of 16), one multiplication by H each: the reference the assembly is
// tested against, and the path of a CPU without it.
func ghashGeneric(y *[2]uint64, t *ghashTable, p []byte) {
	h := t[ghashBlocks-1]
	hx := u128{lo: h[0], hi: h[1]} // xinv(H)
	acc := u128{lo: y[0], hi: y[1]}
	for ; len(p) >= 16; p = p[16:] {
		x := load(p)
		acc = mulx(u128{lo: acc.lo ^ x.lo, hi: acc.hi ^ x.hi}, hx)
	}
	y[0], y[1] = acc.lo, acc.hi
}

// ghashTag writes the GHASH-AES tag of p under k into tag (TagLen bytes,
// not overlapping p) with the table: GHASH of p zero-padded and its bit
// length, masked by AES(K1, J0) and encrypted under the outer key.
func (k *Key) ghashTag(tag, p []byte) {
	var y [2]uint64
	n := len(p) &^ 15
	var last [32]byte
	m := 16
	if copy(last[:], p[n:]) > 0 {
		m = 32
	}
	binary.BigEndian.PutUint64(last[m-16:], uint64(len(p))*8)
	ghashUpdate2(&y, &k.tab, p[:n], last[:m])
	binary.BigEndian.PutUint64(tag[0:8], y[1]^k.mask.hi)
	binary.BigEndian.PutUint64(tag[8:16], y[0]^k.mask.lo)
	k.outer.Encrypt(tag, tag)
}
