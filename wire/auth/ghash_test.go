package auth

import (
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/dchest/siphash"

	"github.com/ethergm/ethergm/wire"
)

// gfMul multiplies x and y in GHASH's field GF(2^128) (NIST SP 800-38D,
// algorithm 1: bit-reflected, reduction polynomial x^128 + x^7 + x^2 + x + 1),
// bit by bit: a reference written from the specification, independent of
// crypto/cipher's GCM.
func gfMul(x, y [16]byte) [16]byte {
	var z [16]byte
	v := y
	for i := 0; i < 128; i++ {
		if x[i/8]>>(7-i%8)&1 == 1 {
			for j := range z {
				z[j] ^= v[j]
			}
		}
		lsb := v[15] & 1
		for j := 15; j > 0; j-- {
			v[j] = v[j]>>1 | v[j-1]<<7
		}
		v[0] >>= 1
		if lsb == 1 {
			v[0] ^= 0xe1
		}
	}
	return z
}

// refGHASHAES is docs/PROTOCOL.md section 19.1's GHASH-AES written from
// its definition: with the GHASH key K1 and the outer key K2 of section 19.2,
// H = AES(K1, 0^128), S = GHASH_H(covered zero-padded to 16 bytes ‖
// 64-bit bit length of covered ‖ 0^64), tag = AES(K2, S XOR AES(K1, 0^96 ‖
// 0x00000001)).
func refGHASHAES(t *testing.T, secret string, covered []byte) [16]byte {
	t.Helper()
	g := derive(ghashLabel, []byte(secret))
	k1, err := aes.NewCipher(g[:16])
	if err != nil {
		t.Fatal(err)
	}
	k2, err := aes.NewCipher(g[16:])
	if err != nil {
		t.Fatal(err)
	}
	var h, x, j0, mask, tag [16]byte
	k1.Encrypt(h[:], h[:])
	block := func(b []byte) {
		var c [16]byte
		copy(c[:], b)
		for i := range x {
			x[i] ^= c[i]
		}
		x = gfMul(x, h)
	}
	for p := covered; len(p) > 0; {
		n := min(16, len(p))
		block(p[:n])
		p = p[n:]
	}
	var lens [16]byte
	binary.BigEndian.PutUint64(lens[:8], uint64(len(covered))*8)
	block(lens[:])
	j0[15] = 1
	k1.Encrypt(mask[:], j0[:])
	for i := range x {
		x[i] ^= mask[i]
	}
	k2.Encrypt(tag[:], x[:])
	return tag
}

// sizedFrame is a DATA frame with paylen bytes of payload (byte i is i),
// with room for the trailer.
func sizedFrame(paylen int) []byte {
	f := &wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, Flags: wire.FlagAckRequest,
		Size: 14, TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 7, MsgLen: uint32(paylen)}
	p := make([]byte, paylen)
	for i := range p {
		p[i] = byte(i)
	}
	b := wire.AppendFrame(make([]byte, 0, paylen+128), hostB, hostA, wire.EtherType, f, p)
	return b[:len(b)+TrailerLen]
}

// TestTagByLength checks both MACs against references written from their
// definitions, on each side of GHASHMin: SipHash-2-4-128 (through
// dchest/siphash, whose vectors TestSipHashVectors checks) below it, the
// bit-by-bit GHASH-AES above, for every covered length around the
// threshold and for full frames at MTU 1500 and 9000.
func TestTagByLength(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	k := mustKey(t, testSecret)
	hdr := len(dataFrame()) - TrailerLen - len("hello, ethergm world") // Ethernet + DATA header
	for _, paylen := range []int{0, 8, GHASHMin - hdr - OffTag - 2, GHASHMin - hdr - OffTag - 1, GHASHMin - hdr - OffTag,
		GHASHMin - hdr - OffTag + 1, 1000, 1436, 8936} {
		b := sizedFrame(paylen)
		n0 := wire.FrameLen(b)
		n := a.Seal(b)
		if n != n0+TrailerLen {
			t.Fatalf("paylen %d: Seal = %d", paylen, n)
		}
		covered := b[:n0+OffTag]
		var want [16]byte
		if len(covered) >= GHASHMin {
			want = refGHASHAES(t, testSecret, covered)
		} else {
			h0, h1 := siphash.Hash128(k.k0, k.k1, covered)
			binary.BigEndian.PutUint64(want[:8], h0)
			binary.BigEndian.PutUint64(want[8:], h1)
		}
		if got := b[n0+OffTag : n]; !bytes.Equal(got, want[:]) {
			t.Fatalf("covered length %d: tag %x, want %x", len(covered), got, want)
		}
	}
}

// TestOpenRestoresTag: Open computes a GHASH-AES tag in the trailer's tag
// bytes; whether the frame opens or not, it leaves the frame as it found
// it.
func TestOpenRestoresTag(t *testing.T) {
	a := mustAuth(t, 7, testSecret, "old-cluster-secret-0123456789ab")
	other := mustAuth(t, 7, "another-cluster-secret-abcdefgh")
	b := longFrame()
	n0 := wire.FrameLen(b)
	n := a.Seal(b)
	bad := append([]byte(nil), b[:n]...)
	bad[100] ^= 1
	for name, c := range map[string]struct {
		a    *Authenticator
		f    []byte
		want error
	}{
		"good": {a, b[:n], nil}, "wrong key": {other, b[:n], ErrTag}, "tampered": {a, bad, ErrTag},
	} {
		before := append([]byte(nil), c.f...)
		if err := c.a.Open(c.f, n0); err != c.want {
			t.Fatalf("%s: Open = %v, want %v", name, err, c.want)
		}
		if !bytes.Equal(c.f, before) {
			t.Fatalf("%s: Open changed the frame", name)
		}
	}
}

// TestGoldenSealedLong pins the tag of a sealed frame long enough for
// GHASH-AES (docs/PROTOCOL.md section 19.4): the DATA frame of
// sizedFrame(200) sealed with the golden vector's secret for partition 7.
func TestGoldenSealedLong(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	b := sizedFrame(200)
	n0 := wire.FrameLen(b)
	n := a.Seal(b)
	got := hex.EncodeToString(b[n0:n])
	const want = "0007a1007a9fc666f4570aa9b16472006f6631de"
	if got != want {
		t.Fatalf("trailer %s, want %s (frame %x)", got, want, b[:n0])
	}
}
