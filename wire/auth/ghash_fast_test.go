package auth

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestGMulMatchesReference checks the field multiplication behind the
// power table (reflected integers, multiplier times x^-1, two-step
// reduction) against gfMul, the bit-by-bit multiplication written from
// the specification.
func TestGMulMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var a, b [16]byte
	for i := 0; i < 2000; i++ {
		for j := range a {
			a[j], b[j] = byte(r.Uint32()), byte(r.Uint32())
		}
		if i < 16 { // single bits, including both ends
			a, b = [16]byte{}, [16]byte{}
			a[i] = 0x80
			b[15-i] = 0x01
		}
		want := load(func() []byte { w := gfMul(a, b); return w[:] }())
		if got := gmul(load(a[:]), load(b[:])); got != want {
			t.Fatalf("%x * %x = %x, want %x", a, b, got, want)
		}
	}
}

// TestGHASHUpdateMatchesGeneric runs ghashUpdate2 on every path this CPU
// has (the 512-bit assembly, the 256-bit one; ghashPaths) against the
// one-block-at-a-time Go loop, over every block count of p up to 100 (the
// 16- and 32-block loops, every remainder, odd and even) followed by zero to two
// blocks of q (a tag's last blocks), from random running values and at
// every alignment of the input.
func TestGHASHUpdateMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	k := mustKey(t, testSecret)
	buf := make([]byte, 100*16+3)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	var qb [32 + 3]byte
	for i := range qb {
		qb[i] = byte(r.Uint32())
	}
	forEachGHASHPath(t, func(t *testing.T) {
		for n := 0; n <= 100; n++ {
			for m := 0; m <= 2; m++ {
				for off := 0; off < 3; off++ {
					p := buf[off : off+n*16]
					q := qb[off : off+m*16]
					y0 := [2]uint64{r.Uint64(), r.Uint64()}
					want, got := y0, y0
					ghashGeneric(&want, &k.tab, p)
					ghashGeneric(&want, &k.tab, q)
					ghashUpdate2(&got, &k.tab, p, q)
					if got != want {
						t.Fatalf("%d+%d blocks at offset %d: %x, want %x", n, m, off, got, want)
					}
				}
			}
		}
	})
}

// TestGHASHTagMatchesGCM: the tags ghashTag computes are AES-GCM's (the
// construction docs/PROTOCOL.md section 19.1 defines and Key.ghash used
// to compute through crypto/cipher alone), for every covered length up to
// 600 bytes, lengths around full frames at MTU 1500 and 9000, several keys,
// and refGHASHAES (bit by bit) on a sample.
func TestGHASHTagMatchesGCM(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := make([]byte, 9300)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	var lens []int
	for n := 0; n <= 600; n++ {
		lens = append(lens, n)
	}
	for n := 1400; n <= 1540; n++ {
		lens = append(lens, n)
	}
	lens = append(lens, 4095, 4096, 4097, 8936, 9000, 9018, 9216, 9240)
	forEachGHASHPath(t, func(t *testing.T) {
		for _, secret := range []string{testSecret, "another-cluster-secret-abcdefgh", "0123456789abcdef"} {
			k := mustKey(t, secret)
			for i, n := range lens {
				off := i % 4
				covered := p[off : off+n]
				var got, want [16]byte
				k.ghashTag(got[:], covered)
				w := k.gcm.Seal(want[:0], ghashNonce[:], nil, covered)
				k.outer.Encrypt(w, w)
				if got != want {
					t.Fatalf("%q, covered length %d: tag %x, want %x", secret, n, got, want)
				}
				if i%97 == 0 {
					if ref := refGHASHAES(t, secret, covered); !bytes.Equal(got[:], ref[:]) {
						t.Fatalf("%q, covered length %d: tag %x, reference %x", secret, n, got, ref)
					}
				}
			}
		}
	})
}

// BenchmarkGHASHTag compares the tag of a full frame at MTU 1500 and 9000
// through ghashTag and through crypto/cipher's GCM.
func BenchmarkGHASHTag(b *testing.B) {
	k := mustKey(b, testSecret)
	for _, n := range []int{1518, 9018} {
		p := make([]byte, n)
		tag := make([]byte, TagLen)
		b.Run("table/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				k.ghashTag(tag, p)
			}
		})
		b.Run("gcm/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				t := k.gcm.Seal(tag[:0], ghashNonce[:], nil, p)
				k.outer.Encrypt(t, t)
			}
		})
	}
}
