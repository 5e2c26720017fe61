package auth

import (
	"testing"

	"github.com/ethergm/ethergm/wire"
)

// FuzzSealOpen seals a frame built from the input and checks that it opens,
// that its CRC32C is the one a full computation gives (Seal updates it
// for the flag without a second pass), and that changing any one byte the
// tag covers makes Open fail. Arbitrary bytes given to Seal and Open never
// panic.
func FuzzSealOpen(f *testing.F) {
	f.Add([]byte("hello"), uint16(wire.FlagAckRequest), uint8(1), 3, byte(1))
	f.Add(make([]byte, 1436), uint16(0), uint8(5), 1000, byte(0x80))
	f.Add([]byte{}, uint16(wire.FlagAuth), uint8(2), 0, byte(0xff))
	a := mustAuth(f, 7, testSecret)
	f.Fuzz(func(t *testing.T, payload []byte, flags uint16, typ uint8, at int, xor byte) {
		// Arbitrary bytes: no panic, and a sealed result that opens.
		raw := append(append([]byte(nil), payload...), make([]byte, TrailerLen)...)
		if n := a.Seal(raw); n > 0 {
			if a.Open(raw[:n], n-TrailerLen) != nil {
				t.Fatal("a frame Seal accepted does not open")
			}
		}
		_ = a.Open(payload, wire.FrameLen(payload))

		if len(payload) > 9000 {
			payload = payload[:9000]
		}
		h := &wire.HeaderFields{Type: wire.Type(typ%6 + 1), TargetPort: 4, SourcePort: 2, Flags: wire.Flags(flags),
			TargetNode: 2, SourceNode: 1, Session: 3, Seq: 4, MsgLen: uint32(len(payload)), RemoteAddr: 0x1000}
		b := wire.AppendFrame(nil, hostB, hostA, wire.EtherType, h, payload)
		n0 := len(b)
		b = append(b, make([]byte, TrailerLen)...)
		n := a.Seal(b)
		if n != n0+TrailerLen {
			return // not a frame Seal seals (e.g. an unknown type)
		}
		hdr := wire.Header(b[wire.EthHeaderLen:n0])
		if hdr.CRC() != hdr.ComputeCRC() {
			t.Fatalf("CRC %08x after Seal, want %08x", hdr.CRC(), hdr.ComputeCRC())
		}
		if err := a.Open(b, n0); err != nil {
			t.Fatalf("Open = %v", err)
		}
		if xor == 0 {
			xor = 1
		}
		i := at % (n0 + TrailerLen)
		if i < 0 {
			i = -i
		}
		b[i] ^= xor
		if a.Open(b, n0) == nil {
			t.Fatalf("byte %d of %d changed by %#x: Open accepts", i, n, xor)
		}
	})
}

// FuzzGHASHTag checks ghashTag (this package's GHASH, in assembly where the
// CPU has it) against crypto/cipher's GCM for arbitrary input, from any
// alignment.
func FuzzGHASHTag(f *testing.F) {
	f.Add(make([]byte, 1518), uint8(0))
	f.Add([]byte("a frame of thirty-three bytes...."), uint8(3))
	k := mustKey(f, testSecret)
	f.Fuzz(func(t *testing.T, p []byte, off uint8) {
		buf := make([]byte, int(off%16)+len(p))
		q := buf[off%16:]
		copy(q, p)
		var got, want [TagLen]byte
		k.ghashTag(got[:], q)
		w := k.gcm.Seal(want[:0], ghashNonce[:], nil, q)
		k.outer.Encrypt(w, w)
		if got != want {
			t.Fatalf("%d bytes at offset %d: tag %x, want %x", len(q), off%16, got, want)
		}
	})
}
